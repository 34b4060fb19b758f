#!/usr/bin/env python3
"""Differential suite: Debian's apache2 and warren serve the same copy of
Debian's /etc/apache2 (its default modules and confs, what a PHP site adds,
000-default, default-ssl, and one vhost per application of sites.py) and the
same docroots, both with PHP through one php-fpm; every request of sites.py
is asked of both and the answers are compared on status, Location,
Content-Type, Vary, Cache-Control, Expires/ETag/Last-Modified presence,
Content-Language, Content-Encoding and the first body line.

Both servers read the same files: only the environment differs (the
variables /etc/apache2/envvars sets, pointed into a scratch directory, and
DIFF_PORT / DIFF_TLS_PORT, which ports.conf and the vhosts use).

Differences matched by known_differences.ini are deliberate: counted apart,
not as failures. Writes summary.md, differences.txt and results.json into
--out, and prints the summary.
"""

import argparse
import configparser
import gzip
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).parent))
import sites as S  # noqa: E402

HERE = Path(__file__).parent
DEBIAN_DEFAULT_MODS = [
    "access_compat", "alias", "auth_basic", "authn_core", "authn_file", "authz_core", "authz_host", "authz_user", "autoindex",
    "deflate", "dir", "env", "filter", "mime", "mpm_event", "negotiation", "reqtimeout", "setenvif", "status",
]
SITE_MODS = ["rewrite", "headers", "expires", "remoteip", "proxy", "proxy_fcgi", "ssl", "socache_shmcb"]
DEBIAN_DEFAULT_CONFS = ["charset", "localized-error-pages", "other-vhosts-access-log", "security", "serve-cgi-bin"]
FIELDS = ["status", "location", "content-type", "vary", "cache-control", "expires", "etag", "last-modified",
          "content-language", "content-encoding", "first-line"]
FAST_SITES = ["wordpress", "laravel"]
FAST_PER_SITE = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def enable(tree: Path, kind: str, names: list, exts: list):
    enabled = tree / f"{kind}-enabled"
    shutil.rmtree(enabled, ignore_errors=True)
    enabled.mkdir()
    for name in names:
        found = False
        for ext in exts:
            f = f"{name}.{ext}"
            if (tree / f"{kind}-available" / f).is_file():
                (enabled / f).symlink_to(f"../{kind}-available/{f}")
                found = True
        if not found:
            sys.exit(f"{kind}-available has no {name}")


def build_tree(work: Path, all_sites: list, mpm: str) -> Path:
    """A copy of /etc/apache2 with the modules, confs and sites enabled, and
    the docroots under work/www."""
    tree = work / "apache2"
    subprocess.run(["cp", "-a", "/etc/apache2", str(tree)], check=True)
    www = work / "www"
    (tree / "ports.conf").write_text(
        "# Both servers read this file; each gets its own port in DIFF_PORT.\n"
        "Listen 127.0.0.1:${DIFF_PORT}\n<IfModule ssl_module>\n\tListen 127.0.0.1:${DIFF_TLS_PORT}\n</IfModule>\n"
    )
    for name in ["000-default", "default-ssl"]:
        f = tree / "sites-available" / f"{name}.conf"
        text = f.read_text().replace("*:80>", "*:${DIFF_PORT}>").replace("*:443>", "*:${DIFF_TLS_PORT}>")
        f.write_text(text.replace("/var/www/html", str(www / "html")))
    # Debian grants /var/www/ in apache2.conf; the docroots live in www/ instead.
    (tree / "conf-available" / "diff-www.conf").write_text(
        f"<Directory {www}/>\n\tOptions Indexes FollowSymLinks\n\tAllowOverride None\n\tRequire all granted\n</Directory>\n"
    )
    php_conf = next(p for p in sorted((tree / "conf-available").glob("php*-fpm.conf")))
    php_conf.write_text(re.sub(r"unix:/run/php/php[0-9.]*-fpm\.sock", f"unix:{work}/php-fpm.sock", php_conf.read_text()))
    for site in all_sites:
        root = www / site.name / site.public if site.public else www / site.name
        vhost = site.vhost.replace("{root}", str(root))
        (tree / "sites-available" / f"diff-{site.name}.conf").write_text(
            f"<VirtualHost *:${{DIFF_PORT}}>\n"
            f"    ServerName {site.host}\n    DocumentRoot {root}\n"
            f"    ErrorLog ${{APACHE_LOG_DIR}}/{site.name}-error.log\n"
            f"    CustomLog ${{APACHE_LOG_DIR}}/{site.name}-access.log combined\n"
            f"    <Directory {root}>\n        Options FollowSymLinks\n        AllowOverride All\n        Require all granted\n    </Directory>\n"
            f"    {vhost}\n</VirtualHost>\n"
        )
        for rel, content in site.files.items():
            path = www / site.name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                content = content.replace("{root}", str(root)).encode()
            path.write_bytes(content)
    html = www / "html"
    html.mkdir(parents=True)
    shutil.copy("/var/www/html/index.html", html / "index.html")
    (html / "subdir").mkdir()
    (html / "subdir" / "index.html").write_text("<html><body>subdir</body></html>\n")
    (html / "info.php").write_text(S.front_controller("default"))
    (html / ".htaccess").write_text("Require all denied\n")
    users = www / "htpasswd-wordpress"
    subprocess.run(["htpasswd", "-cbB", str(users), "admin", "right-password"], check=True, capture_output=True)
    subprocess.run(["htpasswd", "-bm", str(users), "editor", "apr1-password"], check=True, capture_output=True)
    subprocess.run(["htpasswd", "-bs", str(users), "author", "sha1-password"], check=True, capture_output=True)
    subprocess.run(["chmod", "-R", "a+rX", str(work)], check=True)
    mods = [m for m in DEBIAN_DEFAULT_MODS if not m.startswith("mpm_")] + [f"mpm_{mpm}"]
    enable(tree, "mods", mods + SITE_MODS, ["load", "conf"])
    enable(tree, "conf", DEBIAN_DEFAULT_CONFS + ["diff-www", php_conf.stem], ["conf"])
    enable(tree, "sites", ["000-default", "default-ssl"] + [f"diff-{s.name}" for s in all_sites], ["conf"])
    return tree


class Servers:
    """php-fpm, Apache and warren, started on the tree; stopped on exit."""

    def __init__(self, work: Path, tree: Path, warren: str):
        self.work, self.tree, self.procs = work, tree, []
        self.ports = {"apache": (free_port(), free_port()), "warren": (free_port(), free_port())}
        fpm = sorted(Path("/usr/sbin").glob("php-fpm*"))[-1]
        (work / "php-fpm.conf").write_text(
            f"[global]\nerror_log = {work}/php-fpm.log\ndaemonize = no\npid = {work}/php-fpm.pid\n"
            f"[www]\nuser = www-data\ngroup = www-data\nlisten = {work}/php-fpm.sock\nlisten.mode = 0666\n"
            "pm = static\npm.max_children = 4\nphp_admin_flag[display_errors] = off\n"
        )
        self.spawn("php-fpm", [str(fpm), "-R", "-F", "-y", str(work / "php-fpm.conf")], os.environ.copy())
        self.wait(lambda: (work / "php-fpm.sock").exists(), "php-fpm")
        self.spawn("apache", ["/usr/sbin/apache2", "-d", str(tree), "-f", str(tree / "apache2.conf"), "-DFOREGROUND"], self.env("apache"))
        self.spawn("warren", [warren, "-f", str(tree / "apache2.conf")], self.env("warren"))
        for name, (port, tls) in self.ports.items():
            self.wait(lambda: listening(port) and listening(tls), name)

    def env(self, name: str) -> dict:
        d = self.work / name
        for sub in ["run", "lock", "log"]:
            (d / sub).mkdir(parents=True, exist_ok=True)
        port, tls = self.ports[name]
        return {**os.environ, "APACHE_RUN_USER": "www-data", "APACHE_RUN_GROUP": "www-data",
                "APACHE_PID_FILE": str(d / "run/apache2.pid"), "APACHE_RUN_DIR": str(d / "run"),
                "APACHE_LOCK_DIR": str(d / "lock"), "APACHE_LOG_DIR": str(d / "log"), "LANG": "C",
                "DIFF_PORT": str(port), "DIFF_TLS_PORT": str(tls)}

    def spawn(self, name, argv, env):
        out = open(self.work / f"{name}.out", "wb")
        self.procs.append((name, subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                     start_new_session=True)))

    def wait(self, ready, name):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ready():
                return
            for n, p in self.procs:
                if p.poll() is not None:
                    self.stop()
                    sys.exit(f"{n} exited ({p.returncode}):\n" + (self.work / f"{n}.out").read_text(errors="replace")[-3000:])
            time.sleep(0.05)
        self.stop()
        sys.exit(f"{name} did not start listening in 30 s")

    def stop(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def exchange(port: int, host: str, req: S.Request) -> bytes:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    if req.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        sock = ctx.wrap_socket(sock)
    head = f"{req.method} {req.path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
    headers = {"User-Agent": "warren-apache-diff/1", **req.headers}
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    if req.body or req.method in ("POST", "PUT", "PATCH"):
        head += f"Content-Length: {len(req.body)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + req.body)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (socket.timeout, ConnectionResetError, ssl.SSLError):
        pass
    sock.close()
    return data


def dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        line, _, rest = body.partition(b"\r\n")
        try:
            size = int(line.split(b";")[0], 16)
        except ValueError:
            return out + body
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return out


def answer(data: bytes, req: S.Request, ports: tuple) -> dict:
    """The compared fields of one response, normalized: ports become PORT,
    header lists are compared as sorted sets, ETag/Expires/Last-Modified by
    presence."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "no answer"
    headers = defaultdict(list)
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()].append(v.strip())
    h = lambda name: ", ".join(headers.get(name, []))
    tokens = lambda name: ", ".join(sorted({t.strip().lower() for t in h(name).split(",") if t.strip()}))
    port_re = re.compile(":(%s)\\b" % "|".join(str(p) for p in ports))
    if "chunked" in h("transfer-encoding").lower():
        body = dechunk(body)
    if req.method == "HEAD":
        first = "(HEAD)"
    elif h("content-encoding").lower() == "gzip":
        try:
            first = gzip.decompress(body).split(b"\n")[0].decode("utf-8", "backslashreplace").strip()
        except (OSError, EOFError):
            first = "(gzip, not decodable)"
    elif h("content-encoding"):
        first = f"({h('content-encoding')}-encoded)"
    else:
        # Bytes that are not UTF-8 kept apart (\xe9) from U+FFFD (EF BF BD),
        # which "replace" would make of both.
        first = body.split(b"\n")[0].decode("utf-8", "backslashreplace").strip()
    return {
        "status": status,
        "location": port_re.sub(":PORT", h("location")),
        "content-type": re.sub(r"\s*;\s*", ";", h("content-type").lower()),
        "vary": tokens("vary"),
        "cache-control": tokens("cache-control"),
        "expires": "present" if "expires" in headers else "",
        "etag": "present" if "etag" in headers else "",
        "last-modified": "present" if "last-modified" in headers else "",
        "content-language": tokens("content-language"),
        "content-encoding": h("content-encoding").lower(),
        "first-line": port_re.sub(":PORT", first[:200]),
    }


def load_markup(path: Path) -> list:
    """markup.txt: first lines that are only a server's page markup (error
    pages, listings), one regex a line; '#' starts a comment."""
    lines = [l.strip() for l in path.read_text().splitlines()]
    return [re.compile(l) for l in lines if l and not l.startswith("#")]


def normalized(got: dict, markup: list) -> dict:
    if any(m.fullmatch(got["first-line"]) for m in markup):
        return {**got, "first-line": "(server-made page markup)"}
    return got


def first_line_kind(line: str) -> str:
    if line.startswith("app="):
        return "PHP front controller"
    if line.lower().startswith("<!doctype"):
        return "HTML document " + line[:60]
    return line[:60] or "(empty)"


def difference_class(field: str, a: str, w: str) -> str:
    """What a difference is, without the URL: the values where they are few,
    the kind of first line (and which CGI variables differ) where not."""
    if field == "first-line":
        if a.startswith("app=") and w.startswith("app="):
            va, vw = php_vars(a), php_vars(w)
            return "first-line: PHP saw other " + ",".join(k for k in va if va.get(k) != vw.get(k))
        return f"first-line: apache {first_line_kind(a)!r} / warren {first_line_kind(w)!r}"
    if field == "location":
        return "location: " + ("apache none" if not a else "warren none" if not w else "other target")
    return f"{field}: apache {a or '(none)'!r} / warren {w or '(none)'!r}"


def php_vars(line: str) -> dict:
    return dict(t.partition("=")[::2] for t in line.split(" ")) if line.startswith("app=") else {}


class Deliberate:
    """known_differences.ini: each section one deliberate difference and its
    `reason`. `fields` (regex) names the fields it covers; optional regexes,
    searched: `site`, `request`, `apache.FIELD` and `warren.FIELD` (on the
    two whole answers); `php_vars`: the front controller's variables that
    may differ in the first line (comma-separated), no others."""

    def __init__(self, path: Path):
        ini = configparser.ConfigParser(interpolation=None)
        ini.read(path)
        self.rules = [(name, dict(ini[name])) for name in ini.sections()]
        for name, r in self.rules:
            if "reason" not in r or "fields" not in r:
                sys.exit(f"{path}: [{name}] needs fields and reason")

    def match(self, site: str, key: str, field: str, a: dict, w: dict):
        for name, r in self.rules:
            if not re.fullmatch(r["fields"], field):
                continue
            tests = [("site", site), ("request", key)]
            tests += [(f"apache.{f}", a[f]) for f in FIELDS] + [(f"warren.{f}", w[f]) for f in FIELDS]
            if not all(re.search(r[k], v) for k, v in tests if k in r):
                continue
            if "php_vars" in r and field == "first-line":
                va, vw = php_vars(a[field]), php_vars(w[field])
                allowed = {v.strip() for v in r["php_vars"].split(",")}
                if not va or not vw or any(va.get(k) != vw.get(k) for k in set(va) | set(vw) if k not in allowed):
                    continue
            return name
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warren", default=str(HERE.parent.parent / "target/debug/warren"))
    ap.add_argument("--out", default=None, help="directory for summary.md, differences.txt, results.json")
    ap.add_argument("--fast", action="store_true", help=f"{FAST_PER_SITE} requests of each of {FAST_SITES}")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--mpm", default="event", choices=["event", "worker", "prefork"], help="the MPM both servers run (Debian's is event)")
    args = ap.parse_args()
    # Stopped from outside (a test's timeout), still stop the servers and remove the scratch directory.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    all_sites = [
        S.wordpress(Path("/etc/wordpress/htaccess").read_text()), S.laravel(), S.symfony(), S.drupal(), S.nextcloud(),
        S.joomla(), S.mediawiki(), S.dokuwiki(Path("/etc/dokuwiki/htaccess").read_text()), S.manual(),
    ]
    plan = [(s.name, s.host, r) for s in all_sites for r in s.requests] + [("default", "localhost", r) for r in S.debian_default()]
    if args.fast:
        plan = [p for s in FAST_SITES for p in [q for q in plan if q[0] == s][:FAST_PER_SITE]]
    work = Path(tempfile.mkdtemp(prefix="warren-apache-diff."))
    os.chmod(work, 0o755)
    servers = None
    try:
        tree = build_tree(work, all_sites, args.mpm)
        servers = Servers(work, tree, args.warren)
        all_ports = servers.ports["apache"] + servers.ports["warren"]
        deliberate = Deliberate(HERE / "known_differences.ini")
        markup = load_markup(HERE / "markup.txt")
        rows = []
        for site, host, req in plan:
            raw = {}
            for name, (port, tls_port) in servers.ports.items():
                p = tls_port if req.tls else port
                raw[name] = answer(exchange(p, f"{host}:{p}", req), req, all_ports)
            a, w = normalized(raw["apache"], markup), normalized(raw["warren"], markup)
            diffs = [f for f in FIELDS if a[f] != w[f]]
            explained = {f: deliberate.match(site, req.key(), f, a, w) for f in diffs}
            unexplained = [f for f in diffs if not explained[f]]
            verdict = "identical" if not diffs else "different" if unexplained else "deliberate"
            rows.append({"site": site, "request": req.key(), "verdict": verdict, "apache": raw["apache"], "warren": raw["warren"],
                         "strict_identical": raw["apache"] == raw["warren"],
                         "differences": unexplained, "deliberate": sorted({v for v in explained.values() if v})})
    finally:
        if servers:
            servers.stop()
        if args.keep:
            print(f"scratch directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(rows, args)


def report(rows: list, args):
    per_site = defaultdict(Counter)
    for r in rows:
        per_site[r["site"]][r["verdict"]] += 1
    total = Counter(r["verdict"] for r in rows)
    n = len(rows)
    compared = n - total["deliberate"]
    lines = ["| site | identical | different | deliberate (excluded) | total | identical % (excl. deliberate) |", "|---|---:|---:|---:|---:|---:|"]
    for site, c in per_site.items():
        t = sum(c.values())
        base = t - c["deliberate"]
        lines.append(f"| {site} | {c['identical']} | {c['different']} | {c['deliberate']} | {t} | {100 * c['identical'] / base if base else 100:.1f} |")
    lines.append(f"| **all** | {total['identical']} | {total['different']} | {total['deliberate']} | {n} | {100 * total['identical'] / compared if compared else 100:.1f} |")
    by_class = defaultdict(list)
    for r in rows:
        for f in r["differences"]:
            by_class[difference_class(f, r["apache"][f], r["warren"][f])].append(
                f"{r['site']}\t{r['request']}\n\tapache: {r['apache'][f]!r}\n\twarren: {r['warren'][f]!r}")
    classes = Counter({cls: len(v) for cls, v in by_class.items()})
    detail = [f"## {cls} ({c})\n" + "\n".join(by_class[cls]) + "\n" for cls, c in classes.most_common()]
    excluded = defaultdict(list)
    for r in rows:
        for name in r["deliberate"]:
            excluded[name].append(f"{r['site']}\t{r['request']}")
    detail += [f"## deliberate, excluded: {name} ({len(v)})\n" + "\n".join(v) + "\n" for name, v in excluded.items()]
    deliberate = Counter(d for r in rows for d in r["deliberate"])
    summary = "\n".join(lines)
    summary += "\n\nDifferences by class (one answer can differ in several fields):\n\n"
    summary += "\n".join(f"- {c} x {cls}" for cls, c in classes.most_common())
    summary += "\n\nDeliberate differences excluded (known_differences.ini), fields matched:\n\n"
    summary += "\n".join(f"- {c} x {name}" for name, c in deliberate.most_common())
    strict = sum(r["strict_identical"] for r in rows)
    summary += f"\n\nidentical {total['identical']} of {n}, deliberate {total['deliberate']}, different {total['different']}"
    summary += f"; identical before markup normalization (markup.txt): {strict}\n"
    print(summary)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(summary)
        (out / "differences.txt").write_text("\n".join(detail) + "\n")
        (out / "results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
