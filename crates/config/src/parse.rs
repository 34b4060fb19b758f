//! Text -> a tree of raw directives, each carrying its file and line.
//!
//! This stage knows Apache's *syntax* and the directives that Apache executes
//! while reading (`Include`, `Define`, `ServerRoot`, `LoadModule`, and the
//! conditional sections `<IfModule>` / `<IfDefine>`), but not what any other
//! directive means: that is the job of `directives/` (through the table).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::modules::{self, Support};

/// Where a directive came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    pub file: Arc<PathBuf>,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One configuration problem, printed as `FILE:LINE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub origin: Origin,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ConfigError {}

#[derive(Clone, Debug)]
pub struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub origin: Origin,
}

/// A container section such as `<VirtualHost *:80>` or `<Directory /srv>`.
/// Conditional sections never appear here: they are evaluated while reading.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub args: Vec<String>,
    pub origin: Origin,
    pub children: Vec<Node>,
}

#[derive(Clone, Debug)]
pub enum Node {
    Directive(Directive),
    Section(Section),
    /// An `<IfModule>` block of a module warren lacks: not acted on, but
    /// kept for the lines in it that make files scripts (see
    /// [`crate::scripts`]), as its module would have run them.
    Skipped(Section),
}

/// State carried through one read of a configuration, including its includes.
pub struct Reader {
    pub server_root: PathBuf,
    /// `-D NAME` and `Define NAME [value]`.
    pub defines: HashMap<String, Option<String>>,
    /// `--mpm` on the command line wins over `LoadModule mpm_*`.
    pub mpm_override: Option<String>,
    /// The MPM chosen by the first `LoadModule mpm_*_module`, if any.
    pub loaded_mpm: Option<(String, Origin)>,
    /// The modules `LoadModule` has loaded (MPMs aside), in order.
    pub loaded_modules: Vec<&'static str>,
    pub errors: Vec<ConfigError>,
    /// Lines read but not acted on: `LoadModule` of a module warren accepts
    /// without doing what it does.
    pub warnings: Vec<ConfigError>,
    /// The `<IfModule>` blocks skipped because warren lacks their module,
    /// each with the number of lines it held: said, as warren does not act
    /// on those lines.
    pub skipped: Vec<ConfigError>,
    /// Reading an `.htaccess` file: what acts while reading is refused.
    pub in_htaccess: bool,
    depth: usize,
    /// How many skipped `<IfModule>` blocks this reading is inside.
    skipped_depth: usize,
}

/// An `<IfModule>` block being skipped because warren lacks its module.
struct SkippedBlock {
    /// Where it opened, and why it is skipped.
    at: Origin,
    why: String,
    /// Its lines, sections' closing tags aside (for the note).
    count: usize,
    /// Its logical lines with their numbers, its sections' tags included.
    lines: Vec<(usize, String)>,
}

const MAX_INCLUDE_DEPTH: usize = 32;
/// Skipped `<IfModule>` blocks nested deeper than this are not read for
/// script marks: each level is read again, and an `.htaccess` file could
/// nest thousands.
const MAX_SKIPPED_DEPTH: usize = 4;
/// The longest a line may become by `${VAR}` expansion: far beyond any real
/// line, and a bound on what each line can cost.
const MAX_EXPANDED_LINE: usize = 64 * 1024;

impl Reader {
    pub fn new(server_root: PathBuf) -> Self {
        Reader {
            server_root,
            defines: HashMap::new(),
            mpm_override: None,
            loaded_mpm: None,
            loaded_modules: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            skipped: Vec::new(),
            in_htaccess: false,
            depth: 0,
            skipped_depth: 0,
        }
    }

    /// The MPM in force at this point of the reading: the command line's,
    /// else the loaded one, else event (warren's default, as in Debian).
    pub fn mpm(&self) -> &str {
        if let Some(m) = &self.mpm_override {
            return m;
        }
        match &self.loaded_mpm {
            Some((m, _)) => m,
            None => "mpm_event_module",
        }
    }

    fn module_present(&self, written: &str) -> bool {
        match modules::find(written) {
            Some(m) if m.support == Support::Mpm => self.mpm() == m.identifier(),
            Some(m) if modules::LOADED_ONLY.contains(&m.name) => self.loaded_modules.contains(&m.name),
            Some(m) => m.loads(),
            None => false,
        }
    }

    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.server_root.join(p)
        }
    }

    fn error(&mut self, origin: &Origin, message: impl Into<String>) {
        self.errors.push(ConfigError { origin: origin.clone(), message: message.into() });
    }

    /// Reads one file. Errors are collected in `self.errors`; what could be
    /// read is returned so that every error in a file is reported at once.
    pub fn read_file(&mut self, path: &Path, included_from: Option<&Origin>) -> Vec<Node> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                self.read_text(&text, Arc::new(path.to_path_buf()))
            }
            Err(e) => {
                let origin = included_from.cloned().unwrap_or(Origin {
                    file: Arc::new(path.to_path_buf()),
                    line: 0,
                });
                self.error(&origin, format!("cannot read {}: {e}", path.display()));
                Vec::new()
            }
        }
    }

    /// Reads configuration text; `file` names it in errors.
    pub fn read_text(&mut self, text: &str, file: Arc<PathBuf>) -> Vec<Node> {
        // Open sections: (section, whether it is a container we keep).
        let mut stack: Vec<Section> = Vec::new();
        let mut top: Vec<Node> = Vec::new();
        // While inside a false conditional, the nesting depth being skipped.
        let mut skip_depth = 0usize;
        // The skipped `<IfModule>` block to report and keep once it ends.
        let mut skipping: Option<SkippedBlock> = None;
        // Conditional sections that were true: their closing tags must match.
        let mut open_conditionals: Vec<(usize, String)> = Vec::new();

        for (line_no, logical) in logical_lines(text) {
            let origin = Origin { file: file.clone(), line: line_no };
            let trimmed = logical.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if skip_depth > 0 {
                if trimmed.starts_with("</") {
                    skip_depth -= 1;
                } else if trimmed.starts_with('<') {
                    skip_depth += 1;
                }
                if skip_depth == 0 {
                    if let Some(SkippedBlock { at, why, count, lines }) = skipping.take().filter(|s| s.count > 0) {
                        let plural = if count == 1 { "" } else { "s" };
                        let node = self.read_skipped(&at, &lines);
                        push_node(&mut stack, &mut top, node);
                        self.skipped.push(ConfigError { origin: at, message: format!("skipped {count} line{plural}: {why}") });
                    }
                } else if let Some(s) = &mut skipping {
                    s.count += usize::from(!trimmed.starts_with("</"));
                    s.lines.push((line_no, logical.clone()));
                }
                continue;
            }
            let expanded = match self.expand_vars(trimmed) {
                Ok(s) => s,
                Err(msg) => {
                    self.error(&origin, msg);
                    continue;
                }
            };
            let trimmed = expanded.as_str();

            if let Some(rest) = trimmed.strip_prefix("</") {
                let Some(name) = rest.strip_suffix('>') else {
                    self.error(&origin, format!("syntax error: '{trimmed}' lacks a closing '>'"));
                    continue;
                };
                let name = name.trim();
                if let Some((depth, cond)) = open_conditionals.last() {
                    if *depth == stack.len() {
                        if !cond.eq_ignore_ascii_case(name) {
                            self.error(&origin, format!("</{name}> without matching <{name}> section (expected </{cond}>)"));
                        }
                        open_conditionals.pop();
                        continue;
                    }
                }
                match stack.pop() {
                    Some(section) if section.name.eq_ignore_ascii_case(name) => {
                        push_node(&mut stack, &mut top, Node::Section(section));
                    }
                    Some(section) => {
                        self.error(&origin, format!("</{name}> without matching <{name}> section (open section is <{}> from line {})", section.name, section.origin.line));
                        push_node(&mut stack, &mut top, Node::Section(section));
                    }
                    None => self.error(&origin, format!("</{name}> without matching <{name}> section")),
                }
                continue;
            }

            if let Some(rest) = trimmed.strip_prefix('<') {
                let Some(inner) = rest.strip_suffix('>') else {
                    self.error(&origin, format!("syntax error: '{trimmed}' lacks a closing '>'"));
                    continue;
                };
                let (name, args) = match split_words(inner) {
                    Ok(mut words) if !words.is_empty() => {
                        let name = words.remove(0);
                        (name, words)
                    }
                    Ok(_) => {
                        self.error(&origin, "empty section tag");
                        continue;
                    }
                    Err(msg) => {
                        self.error(&origin, msg);
                        continue;
                    }
                };
                let lname = name.to_ascii_lowercase();
                if lname == "ifmodule" || lname == "ifdefine" {
                    if args.len() != 1 {
                        self.error(&origin, format!("<{name}> takes exactly one argument"));
                        skip_depth = 1;
                        continue;
                    }
                    let (negate, what) = match args[0].strip_prefix('!') {
                        Some(w) => (true, w),
                        None => (false, args[0].as_str()),
                    };
                    let truth = if lname == "ifmodule" {
                        self.module_present(what)
                    } else {
                        self.defines.contains_key(what)
                    };
                    if truth != negate {
                        open_conditionals.push((stack.len(), name));
                    } else {
                        skip_depth = 1;
                        // Said only when warren lacks the module: a block
                        // for another MPM, one for when a module warren has
                        // is absent, and <IfDefine> are skipped as their
                        // authors meant them to be where warren runs.
                        // A module warren has but that is not loaded (ssl) too.
                        let php = modules::find(what).is_some_and(|m| modules::MOD_PHP.contains(&m.name));
                        let other_mpm = modules::find(what).is_some_and(|m| m.support == Support::Mpm || m.loads()) && !php;
                        if lname == "ifmodule" && !negate && !other_mpm {
                            let why = if php { format!("{}_module is not loaded", modules::short_name(what)) } else { modules::why_not(what) };
                            skipping = Some(SkippedBlock { at: origin.clone(), why: format!("<{name} {}>: {why}", args[0]), count: 0, lines: Vec::new() });
                        }
                    }
                    continue;
                }
                stack.push(Section { name, args, origin, children: Vec::new() });
                continue;
            }

            let mut words = match split_words(trimmed) {
                Ok(w) => w,
                Err(msg) => {
                    self.error(&origin, msg);
                    continue;
                }
            };
            let name = words.remove(0);
            let args = words;
            let lname = name.to_ascii_lowercase();
            if self.in_htaccess && matches!(lname.as_str(), "include" | "includeoptional" | "define" | "undefine" | "serverroot" | "loadmodule") {
                self.error(&origin, format!("{name} not allowed here"));
                continue;
            }
            match lname.as_str() {
                "include" | "includeoptional" => {
                    let optional = name.eq_ignore_ascii_case("includeoptional");
                    if args.len() != 1 {
                        self.error(&origin, format!("{name} takes one argument, a file, directory or wildcard pattern"));
                        continue;
                    }
                    for node in self.include(&args[0], optional, &origin) {
                        push_node(&mut stack, &mut top, node);
                    }
                }
                "define" => match args.len() {
                    1 => {
                        self.defines.insert(args[0].clone(), None);
                    }
                    2 => {
                        self.defines.insert(args[0].clone(), Some(args[1].clone()));
                    }
                    _ => self.error(&origin, "Define takes one or two arguments: NAME [value]"),
                },
                "undefine" => match args.as_slice() {
                    [n] => {
                        self.defines.remove(n);
                    }
                    _ => self.error(&origin, "UnDefine takes one argument"),
                },
                "serverroot" => match args.as_slice() {
                    [root] => {
                        let p = PathBuf::from(root);
                        if !p.is_dir() {
                            self.error(&origin, format!("ServerRoot must be a valid directory: {root}"));
                        } else {
                            self.server_root = p;
                        }
                    }
                    _ => self.error(&origin, "ServerRoot takes one argument"),
                },
                "loadmodule" => self.load_module(&args, &origin),
                _ => push_node(&mut stack, &mut top, Node::Directive(Directive { name, args, origin })),
            }
        }
        if skip_depth > 0 || !open_conditionals.is_empty() {
            let origin = Origin { file: file.clone(), line: text.lines().count() };
            self.error(&origin, "unexpected end of file: a conditional section (<IfModule>/<IfDefine>) is not closed");
        }
        while let Some(section) = stack.pop() {
            let origin = section.origin.clone();
            self.error(&origin, format!("<{}> section is not closed before the end of the file", section.name));
        }
        top
    }

    /// The lines of a skipped `<IfModule>` block (opened at `at`), read as
    /// nodes by a reader of their own, whose errors are not this reading's
    /// (Apache never reads them).
    fn read_skipped(&mut self, at: &Origin, lines: &[(usize, String)]) -> Node {
        let mut children = Vec::new();
        if self.skipped_depth < MAX_SKIPPED_DEPTH {
            // Blank lines keep each line at its number.
            let mut text = String::new();
            let mut line = 1;
            for (n, logical) in lines {
                while line < *n {
                    text.push('\n');
                    line += 1;
                }
                text.push_str(logical);
            }
            let mut inner = Reader::new(self.server_root.clone());
            inner.defines = self.defines.clone();
            inner.mpm_override = self.mpm_override.clone();
            inner.loaded_mpm = self.loaded_mpm.clone();
            inner.loaded_modules = self.loaded_modules.clone();
            inner.in_htaccess = self.in_htaccess;
            inner.depth = self.depth;
            inner.skipped_depth = self.skipped_depth + 1;
            children = inner.read_text(&text, at.file.clone());
        }
        Node::Skipped(Section { name: "IfModule".into(), args: Vec::new(), origin: at.clone(), children })
    }

    fn load_module(&mut self, args: &[String], origin: &Origin) {
        if args.len() != 2 {
            self.error(origin, "LoadModule takes two arguments: a module name and a file name");
            return;
        }
        let module = args[0].as_str();
        let known = modules::find(module).filter(|m| m.identifier() == module);
        match known {
            Some(m) if m.support == Support::Mpm => {
                if let Some((loaded, first)) = &self.loaded_mpm {
                    if loaded != module {
                        let msg = format!("more than one MPM loaded: {module} after {loaded} (at {first})");
                        self.error(origin, msg);
                    }
                    return;
                }
                self.loaded_mpm = Some((module.to_string(), origin.clone()));
            }
            Some(m) if m.loads() => {
                // Every module is kept, for `warren -M`; only those of
                // LOADED_ONLY change what <IfModule> says.
                if !self.loaded_modules.contains(&m.name) {
                    self.loaded_modules.push(m.name);
                }
                if let Some(w) = m.load_warning() {
                    self.warnings.push(ConfigError { origin: origin.clone(), message: w });
                }
            }
            _ => {
                let has: Vec<&str> = modules::MODULES.iter().filter(|m| m.loads()).map(|m| m.name).collect();
                self.error(origin, format!("module {} (warren has: {})", modules::why_not(module), has.join(", ")));
            }
        }
    }

    fn include(&mut self, pattern: &str, optional: bool, origin: &Origin) -> Vec<Node> {
        if self.depth >= MAX_INCLUDE_DEPTH {
            self.error(origin, format!("Include nested more than {MAX_INCLUDE_DEPTH} levels deep (a loop?)"));
            return Vec::new();
        }
        let path = self.resolve(pattern);
        let mut files = Vec::new();
        let has_wildcard = pattern.contains(['*', '?', '[']);
        if has_wildcard {
            match glob::glob(&path.to_string_lossy()) {
                Ok(paths) => files.extend(paths.flatten().filter(|p| p.is_file())),
                Err(e) => {
                    self.error(origin, format!("bad wildcard pattern {pattern}: {e}"));
                    return Vec::new();
                }
            }
            if files.is_empty() && !optional {
                self.error(origin, format!("Include: no matches for the wildcard pattern {}", path.display()));
            }
        } else if path.is_dir() {
            collect_dir(&path, &mut files);
        } else if path.exists() || !optional {
            files.push(path);
        }
        files.sort();
        self.depth += 1;
        let mut nodes = Vec::new();
        for f in files {
            nodes.extend(self.read_file(&f, Some(origin)));
        }
        self.depth -= 1;
        nodes
    }

    /// Replaces `${NAME}` by its `Define`d value (or the environment's).
    fn expand_vars(&self, line: &str) -> Result<String, String> {
        if !line.contains("${") {
            return Ok(line.to_string());
        }
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err("unterminated ${ in variable reference".into());
            };
            let (name, default) = match after[..end].split_once("?=") {
                Some((n, d)) => (n, Some(d)),
                None => (&after[..end], None),
            };
            let env;
            let value = match self.defines.get(name) {
                Some(Some(v)) => v.as_str(),
                _ => match (std::env::var(name), default) {
                    (Ok(v), _) => {
                        env = v;
                        env.as_str()
                    }
                    (Err(_), Some(d)) => d,
                    // `${map:key}` is mod_rewrite's, not a variable: kept as written, as Apache does.
                    (Err(_), None) if name.contains(':') => &rest[start..start + 2 + end + 1],
                    (Err(_), None) => return Err(format!("variable ${{{name}}} is not defined (use Define {name} value)")),
                },
            };
            // `Define X ${X}${X}` doubles X: unbounded, forty such lines
            // would ask for a terabyte.
            if out.len() + value.len() > MAX_EXPANDED_LINE {
                return Err(format!("line longer than {MAX_EXPANDED_LINE} bytes once its variables are expanded"));
            }
            out.push_str(value);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn collect_dir(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            collect_dir(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn push_node(stack: &mut [Section], top: &mut Vec<Node>, node: Node) {
    match stack.last_mut() {
        Some(section) => section.children.push(node),
        None => top.push(node),
    }
}

/// Splits text into logical lines, joining lines that end in a backslash.
/// Each logical line is numbered by its first physical line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let (continued, body) = match line.strip_suffix('\\') {
            Some(b) => (true, b),
            None => (false, line),
        };
        let entry = pending.get_or_insert_with(|| (i + 1, String::new()));
        if !entry.1.is_empty() {
            entry.1.push(' ');
        }
        entry.1.push_str(if entry.1.is_empty() { body } else { body.trim_start() });
        if !continued {
            out.extend(pending.take());
        }
    }
    out.extend(pending);
    out
}

/// Splits a directive line into words; `"..."` and `'...'` group words and
/// `\"` escapes a quote inside them.
pub fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&c) = chars.peek() else { break };
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            let mut closed = false;
            while let Some(ch) = chars.next() {
                if ch == '\\' && matches!(chars.peek(), Some(&q) if q == c || q == '\\') {
                    word.push(chars.next().unwrap_or(c));
                } else if ch == c {
                    closed = true;
                    break;
                } else {
                    word.push(ch);
                }
            }
            if !closed {
                return Err(format!("unterminated quoted string: {c}{word}"));
            }
        } else {
            while let Some(ch) = chars.next_if(|ch| !ch.is_whitespace()) {
                word.push(ch);
            }
        }
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Vec<Node>, Vec<ConfigError>) {
        let mut r = Reader::new(std::env::temp_dir());
        let nodes = r.read_text(text, Arc::new(PathBuf::from("test.conf")));
        (nodes, r.errors)
    }

    fn names(nodes: &[Node]) -> Vec<String> {
        nodes
            .iter()
            .map(|n| match n {
                Node::Directive(d) => format!("{} {}", d.name, d.args.join("|")),
                Node::Section(s) => format!("<{} {}>[{}]", s.name, s.args.join("|"), names(&s.children).join(";")),
                Node::Skipped(s) => format!("skipped:{}[{}]", s.origin.line, names(&s.children).join(";")),
            })
            .collect()
    }

    #[test]
    fn words_quotes_and_escapes() {
        assert_eq!(split_words(r#"LogFormat "%h \"%r\"" combined"#).unwrap(), vec!["LogFormat", r#"%h "%r""#, "combined"]);
        assert_eq!(split_words("  a   'b c'  d ").unwrap(), vec!["a", "b c", "d"]);
        assert!(split_words(r#"X "open"#).is_err());
    }

    #[test]
    fn continuation_comments_and_line_numbers() {
        let (nodes, errors) = read("# c\nListen \\\n  8080\n\n  # indented comment\nServerName a\n");
        assert!(errors.is_empty());
        assert_eq!(names(&nodes), vec!["Listen 8080", "ServerName a"]);
        match &nodes[1] {
            Node::Directive(d) => assert_eq!(d.origin.line, 6),
            _ => panic!(),
        }
    }

    #[test]
    fn conditionals_and_defines() {
        let text = "Define FOO\nDefine root /srv\n<IfDefine FOO>\nA 1\n</IfDefine>\n<IfDefine !FOO>\nB 2\n<Nested>\n</Nested>\n</IfDefine>\n<IfModule mpm_event_module>\nC ${root}\n</IfModule>\n<IfModule !mod_mime.c>\nD\n</IfModule>\n<IfModule prefork.c>\nE\n</IfModule>";
        let (nodes, errors) = read(text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(names(&nodes), vec!["A 1", "C /srv"]);
    }

    #[test]
    fn expansion_is_bounded() {
        // Each line doubles X: without a bound the 40th would need 2^41 bytes.
        let mut text = String::from("Define X ab\n");
        text.push_str(&"Define X ${X}${X}\n".repeat(40));
        text.push_str("Y ${X}\n");
        let (nodes, errors) = read(&text);
        // Line 15 leaves X 2^15 bytes long; line 16 would be 9 + 2^16 bytes
        // long, so it and every later doubling are refused, and X stays.
        assert_eq!(errors.len(), 26);
        assert_eq!(errors[0].origin.line, 16);
        assert!(errors[0].message.contains("once its variables are expanded"), "{}", errors[0]);
        match nodes.last() {
            Some(Node::Directive(d)) => assert_eq!((d.name.as_str(), d.args[0].len()), ("Y", 1 << 15)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sections_nest_and_errors_carry_lines() {
        let (nodes, errors) = read("<VirtualHost *:80>\n<Directory /x>\nOptions None\n</Directory>\n</VirtualHost>\n");
        assert!(errors.is_empty());
        assert_eq!(names(&nodes), vec!["<VirtualHost *:80>[<Directory /x>[Options None]]"]);
        let (_, errors) = read("<Directory /x>\nA\n</Files>\n");
        assert_eq!(errors[0].origin.line, 3);
        let (_, errors) = read("X\n<Directory /x>\nA\n");
        assert_eq!(errors[0].origin.line, 2);
        assert!(errors[0].message.contains("not closed"));
        let (_, errors) = read("A ${NOPE_NOT_SET_ANYWHERE}\n");
        assert!(errors[0].message.contains("not defined"));
    }

    #[test]
    fn load_module_selects_mpm_and_rejects_unknown() {
        let mut r = Reader::new(std::env::temp_dir());
        let nodes = r.read_text(
            "LoadModule mpm_prefork_module x.so\n<IfModule mpm_prefork_module>\nP\n</IfModule>\nLoadModule gnutls_module y.so\nLoadModule mpm_worker_module z.so\nLoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so\nLoadModule frobnicate_module f.so\n",
            Arc::new(PathBuf::from("t")),
        );
        assert_eq!(names(&nodes), vec!["P "]);
        assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
        assert_eq!(r.errors[0].origin.line, 5);
        assert!(r.errors[0].message.starts_with("module gnutls_module is not built into warren"), "{}", r.errors[0]);
        assert!(r.errors[0].message.contains("warren has: core, so,"), "{}", r.errors[0]);
        assert!(r.errors[1].message.contains("more than one MPM"));
        assert_eq!(r.errors[2].origin.line, 8);
        assert!(r.errors[2].message.starts_with("module frobnicate_module is not built into warren"), "{}", r.errors[2]);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    /// A kept block's lines keep their numbers, nested blocks and sections
    /// included; what would be an error in it is none (Apache never reads
    /// it), and nothing in it acts while reading.
    #[test]
    fn skipped_blocks_are_kept_with_their_lines() {
        let text = "Listen 80\n<IfModule mod_include.c>\n  AddHandler fcgid-script .php\n  <FilesMatch \\.phtml$>\n    SetHandler fcgid-script\n  </FilesMatch>\n  <IfModule mod_x.c>\n    FcgidWrapper /usr/bin/php-cgi \\\n      .php\n  </IfModule>\n  Define INSIDE\n  \"unclosed\n</IfModule>\n";
        let mut r = Reader::new(std::env::temp_dir());
        let nodes = r.read_text(text, Arc::new(PathBuf::from("f.conf")));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert!(!r.defines.contains_key("INSIDE"));
        assert_eq!(names(&nodes), vec!["Listen 80", "skipped:2[AddHandler fcgid-script|.php;<FilesMatch \\.phtml$>[SetHandler fcgid-script];skipped:7[FcgidWrapper /usr/bin/php-cgi|.php]]"]);
        let Node::Skipped(block) = &nodes[1] else { panic!() };
        let lines: Vec<usize> = block.children.iter().map(|n| match n {
            Node::Directive(d) => d.origin.line,
            Node::Section(s) | Node::Skipped(s) => s.origin.line,
        }).collect();
        assert_eq!(lines, vec![3, 4, 7]);
        let Node::Skipped(inner) = &block.children[2] else { panic!() };
        let Node::Directive(wrapper) = &inner.children[0] else { panic!() };
        assert_eq!(wrapper.origin.line, 8);
    }

    /// Nested deeper than [`MAX_SKIPPED_DEPTH`], blocks are not read again.
    #[test]
    fn deeply_nested_skipped_blocks_are_bounded() {
        let depth = 5000;
        let text = format!("{}AddHandler php-script .php\n{}", "<IfModule mod_x.c>\n".repeat(depth), "</IfModule>\n".repeat(depth));
        let mut r = Reader::new(std::env::temp_dir());
        let nodes = r.read_text(&text, Arc::new(PathBuf::from("deep.conf")));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(nodes.len(), 1);
    }

    /// `<IfModule>` blocks skipped because warren lacks the module are
    /// said, with their line count; those of another MPM, negated ones for
    /// a module warren has, empty ones and `<IfDefine>` are not.
    #[test]
    fn skipped_ifmodule_blocks_are_said() {
        let text = "<IfModule mod_ssl.c>\n  # a comment\n  Listen 443\n  <VirtualHost *:443>\n    SSLEngine on\n    <IfModule mod_nothere.c>\n      X\n    </IfModule>\n  </VirtualHost>\n</IfModule>\n<IfModule mpm_prefork_module>\nMaxSpareServers 5\n</IfModule>\n<IfModule !mod_mime.c>\nA\n</IfModule>\n<IfModule mod_php7.c>\n</IfModule>\n<IfDefine NOPE>\nB\n</IfDefine>\n<IfModule mod_frob.c>\nphp_value x 1\n</IfModule>\n<IfModule mod_negotiation.c>\nOptions -MultiViews\n</IfModule>\n";
        let mut r = Reader::new(std::env::temp_dir());
        let nodes = r.read_text(text, Arc::new(PathBuf::from("s.conf")));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        // The block of a lacking module is kept, for its script marks.
        assert_eq!(names(&nodes), vec!["skipped:22[php_value x|1]", "Options -MultiViews"]);
        let skipped: Vec<String> = r.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            vec![
                "s.conf:22: skipped 1 line: <IfModule mod_frob.c>: frob_module is not built into warren",
            ]
        );
    }

    #[test]
    fn include_with_glob() {
        let dir = std::env::temp_dir().join(format!("warren-inc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        std::fs::write(dir.join("conf.d/a.conf"), "A 1\n").unwrap();
        std::fs::write(dir.join("conf.d/b.conf"), "B 2\n").unwrap();
        let mut r = Reader::new(dir.clone());
        let nodes = r.read_text("Include conf.d/*.conf\nIncludeOptional nothing/*.conf\nInclude missing.conf\n", Arc::new(PathBuf::from("main.conf")));
        assert_eq!(names(&nodes), vec!["A 1", "B 2"]);
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].origin.line, 3);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
