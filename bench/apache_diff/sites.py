"""The sites the differential suite serves: for each application, its
Apache rules (its .htaccess or vhost lines as the project ships them, or
Debian's file where Debian packages it), a small docroot holding the files
those rules name, and the requests asked of it.

Rules are written from each project's documentation, not copied whole;
Debian's WordPress and DokuWiki files are read from the packages and their
commented-out rewrite blocks switched on, as their comments say to do.
"""

import re
from dataclasses import dataclass, field

# A compressible script larger than any compression threshold, and a tiny
# stylesheet below them (mod_deflate compresses both; warren may not).
LARGE_JS = "".join(f"var line{i} = 'the quick brown fox jumps over the lazy dog {i}';\n" for i in range(4000))
TINY_CSS = "body{margin:0}\n"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e527de4a0000000049454e44ae426082"
)


def front_controller(app: str) -> str:
    """A front controller whose first line says what PHP was asked."""
    return (
        "<?php\n"
        "$s = $_SERVER;\n"
        f"echo 'app={app}',"
        " ' method=', $s['REQUEST_METHOD'],"
        " ' uri=', $s['REQUEST_URI'],"
        " ' script=', $s['SCRIPT_NAME'],"
        " ' path_info=', $s['PATH_INFO'] ?? '-',"
        " ' qs=', $s['QUERY_STRING'] ?? '',"
        " ' user=', $s['REMOTE_USER'] ?? '-',"
        " \"\\n\";\n"
        "echo 'file=', basename(__FILE__), \"\\n\";\n"
    )


@dataclass
class Request:
    method: str
    path: str
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    tls: bool = False

    def key(self) -> str:
        extra = " ".join(f"{k}:{v}" for k, v in sorted(self.headers.items()))
        scheme = "https " if self.tls else ""
        return f"{scheme}{self.method} {self.path}" + (f" [{extra}]" if extra else "")


@dataclass
class Site:
    name: str
    # Lines inside the site's <VirtualHost>, after ServerName and DocumentRoot;
    # {root} is the docroot.
    vhost: str
    files: dict
    requests: list
    # The DocumentRoot below the site's directory (Laravel's public/, ...).
    public: str = ""
    host: str = ""

    def __post_init__(self):
        self.host = self.host or f"{self.name}.test"


def get(path, **headers):
    return Request("GET", path, headers)


def common_requests(static_tiny: str, static_large: str, directory: str, prefix: str = "") -> list:
    """What every site is asked: methods, encodings, path info, missing
    files, dot segments, fragments, hidden files."""
    p = prefix
    gz = {"Accept-Encoding": "gzip"}
    br = {"Accept-Encoding": "br"}
    both = {"Accept-Encoding": "gzip, deflate, br"}
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    return [
        get(f"{p}/"),
        Request("HEAD", f"{p}/"),
        get(f"{p}/", **gz),
        get(f"{p}/index.php"),
        get(f"{p}/index.php?a=1&b=2"),
        get(f"{p}/index.php/some/path"),
        get(f"{p}/index.php/some/path?x=1"),
        get(f"{p}/missing-page"),
        get(f"{p}/missing-page/"),
        get(f"{p}/missing-page?q=1"),
        get(f"{p}/missing.php"),
        get(f"{p}/missing.php/extra"),
        get(f"{p}/missing.css"),
        get(f"{p}/missing-dir/missing.png"),
        get(static_tiny),
        get(static_tiny, **gz),
        get(static_tiny, **br),
        Request("HEAD", static_tiny),
        get(static_large),
        get(static_large, **gz),
        get(static_large, **br),
        get(static_large, **both),
        Request("HEAD", static_large, gz),
        Request("POST", f"{p}/", form, b"a=1&b=2"),
        Request("POST", f"{p}/index.php", form, b"a=1"),
        Request("POST", static_tiny, form, b"a=1"),
        Request("POST", f"{p}/missing-page", form, b"a=1"),
        Request("OPTIONS", f"{p}/"),
        Request("OPTIONS", static_tiny),
        Request("PUT", f"{p}/index.php", {"Content-Type": "text/plain"}, b"data"),
        Request("PUT", static_tiny, {"Content-Type": "text/plain"}, b"data"),
        Request("DELETE", static_tiny),
        get(f"{p}/.htaccess"),
        get(f"{p}/.git/config"),
        get(f"{p}/../../etc/passwd"),
        get(f"{p}/%2e%2e/%2e%2e/etc/passwd"),
        get(f"{p}/%2e/index.php"),
        get(f"{p}/missing/%2e%2e/index.php"),
        get(f"{p}/index.php%2fextra"),
        get(f"{p}/index.php#fragment"),
        get(f"{p}/#top"),
        get(f"{p}//index.php"),
        get(directory.rstrip("/")),
        get(directory),
        get(f"{p}/?s=%3Cscript%3E"),
        get(f"{p}/%7Euser/"),
        # A name in Latin-1, as legacy links have them: the path decodes to
        # a byte that is not UTF-8 (E9), which the rules match and pass on.
        get(f"{p}/caf%E9?q=%E9"),
        get(f"{p}/index.php/caf%E9"),
    ]


def wordpress(debian_htaccess: str) -> Site:
    # Debian's /etc/wordpress/htaccess with its single-blog block (the
    # permalink rules WordPress writes itself) switched on; the multi-site
    # block after it stays commented out.
    lines, single_blog = [], True
    for line in debian_htaccess.splitlines():
        if "multi-site" in line:
            single_blog = False
        if single_blog and re.match(r"#(<|/?IfModule|Rewrite)", line):
            line = line[1:]
        lines.append(line)
    files = {
        ".htaccess": "\n".join(lines)
        + "\n\n<Files wp-config.php>\n    Require all denied\n</Files>\n",
        "index.php": front_controller("wordpress"),
        "wp-login.php": front_controller("wordpress"),
        "xmlrpc.php": front_controller("wordpress"),
        "wp-config.php": "<?php define('DB_PASSWORD', 'secret');\n",
        "readme.html": "<!DOCTYPE html>\n<html><head><title>WordPress</title></head><body>readme</body></html>\n",
        "license.txt": "WordPress - Web publishing software\n\nCopyright 2011-2024 by the contributors\n",
        "wp-admin/index.php": front_controller("wordpress-admin"),
        "wp-admin/admin-ajax.php": front_controller("wordpress-admin"),
        # Protecting wp-admin with a password is the commonest .htaccess after rewrites.
        "wp-admin/.htaccess": 'AuthType Basic\nAuthName "WordPress admin"\nAuthUserFile {root}/../htpasswd-wordpress\nRequire valid-user\n'
        "<Files admin-ajax.php>\n    Require all granted\n</Files>\n",
        "wp-admin/css/login.css": TINY_CSS,
        "wp-includes/js/jquery/jquery.js": LARGE_JS,
        "wp-includes/css/tiny.css": TINY_CSS,
        "wp-content/uploads/2024/01/pixel.png": PNG,
        "wp-content/themes/twentyfour/style.css": TINY_CSS,
        "wp-content/themes/twentyfour/functions.php": "<?php\n",
        ".git/config": "[core]\n",
    }
    auth = lambda cred: {"Authorization": "Basic " + __import__("base64").b64encode(cred.encode()).decode()}
    reqs = common_requests("/wp-includes/css/tiny.css", "/wp-includes/js/jquery/jquery.js", "/wp-content/themes/twentyfour/")
    reqs += [
        get("/hello-world/"),
        get("/2024/01/hello-world/"),
        get("/category/news/"),
        get("/feed/"),
        get("/?p=1"),
        get("/wp-json/wp/v2/posts"),
        get("/wp-json/wp/v2/posts?per_page=1"),
        get("/wp-login.php"),
        Request("POST", "/wp-login.php", {"Content-Type": "application/x-www-form-urlencoded"}, b"log=a&pwd=b"),
        get("/xmlrpc.php"),
        get("/xmlrpc.php/extra/path"),
        get("/wp-config.php"),
        get("/WP-CONFIG.PHP"),
        get("/readme.html"),
        get("/license.txt"),
        get("/wp-content/uploads/2024/01/pixel.png"),
        get("/wp-content/uploads/2024/01/missing.png"),
        get("/wp-content/themes/twentyfour/functions.php"),
        get("/wp-content/themes/twentyfour/style.css?ver=6.5"),
        get("/wp-admin"),
        get("/wp-admin/"),
        get("/wp-admin/index.php"),
        get("/wp-admin/", **auth("admin:right-password")),
        get("/wp-admin/", **auth("admin:wrong-password")),
        get("/wp-admin/", **auth("editor:apr1-password")),
        get("/wp-admin/", **auth("author:sha1-password")),
        get("/wp-admin/", **auth("nobody:whatever")),
        get("/wp-admin/", Authorization="Bearer abc"),
        get("/wp-admin/", Authorization="Basic !!!notbase64"),
        get("/wp-admin/admin-ajax.php"),
        get("/wp-admin/admin-ajax.php?action=heartbeat"),
        get("/wp-admin/css/login.css"),
        get("/wp-admin/css/login.css", **auth("admin:right-password")),
        get("/wp-admin/missing.php", **auth("admin:right-password")),
    ]
    return Site("wordpress", "", files, reqs)


def laravel() -> Site:
    htaccess = """<IfModule mod_rewrite.c>
    <IfModule mod_negotiation.c>
        Options -MultiViews -Indexes
    </IfModule>

    RewriteEngine On

    # Handle Authorization Header
    RewriteCond %{HTTP:Authorization} .
    RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]

    # Handle X-XSRF-Token Header
    RewriteCond %{HTTP:x-xsrf-token} .
    RewriteRule .* - [E=HTTP_X_XSRF_TOKEN:%{HTTP:X-XSRF-Token}]

    # Redirect Trailing Slashes If Not A Folder...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_URI} (.+)/$
    RewriteRule ^ %1 [L,R=301]

    # Send Requests To Front Controller...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ index.php [L]
</IfModule>
"""
    files = {
        "public/.htaccess": htaccess,
        "public/index.php": front_controller("laravel"),
        "public/robots.txt": "User-agent: *\nDisallow:\n",
        "public/favicon.ico": PNG,
        "public/css/app.css": TINY_CSS,
        "public/js/app.js": LARGE_JS,
        "public/build/assets/app-4ed993c7.js": LARGE_JS,
        "public/build/manifest.json": '{"resources/js/app.js": {"file": "assets/app-4ed993c7.js"}}\n',
        "public/storage/avatars/a.png": PNG,
        "public/.git/config": "[core]\n",
        ".env": "APP_KEY=secret\n",
        "artisan": "#!/usr/bin/env php\n",
    }
    reqs = common_requests("/css/app.css", "/js/app.js", "/storage/avatars/")
    reqs += [
        get("/login"),
        get("/login/"),
        get("/users/42"),
        get("/users/42/"),
        get("/users/42/edit?tab=profile"),
        get("/api/user", Authorization="Bearer token123"),
        get("/api/user", **{"X-XSRF-TOKEN": "abc"}),
        Request("POST", "/api/users", {"Content-Type": "application/json"}, b'{"name":"a"}'),
        Request("PUT", "/api/users/1", {"Content-Type": "application/json"}, b'{"name":"b"}'),
        Request("DELETE", "/api/users/1"),
        Request("PATCH", "/api/users/1", {"Content-Type": "application/json"}, b"{}"),
        get("/robots.txt"),
        get("/favicon.ico"),
        get("/build/manifest.json"),
        get("/build/assets/app-4ed993c7.js", **{"Accept-Encoding": "gzip"}),
        get("/build/"),
        get("/build"),
        get("/.env"),
        get("/../.env"),
        get("/storage/avatars/a.png"),
        get("/css/"),
    ]
    return Site("laravel", "", files, reqs, public="public")


def symfony() -> Site:
    # symfony/apache-pack's public/.htaccess, as its recipe installs it.
    htaccess = """DirectoryIndex index.php

<IfModule mod_negotiation.c>
    Options -MultiViews
</IfModule>

<IfModule mod_rewrite.c>
    RewriteEngine On

    # The rewrite base, for the front controller to be found in a subdirectory.
    RewriteCond %{REQUEST_URI}::$0 ^(/.+)/(.*)::\\2$
    RewriteRule .* - [E=BASE:%1]

    # Sets the HTTP_AUTHORIZATION header removed by Apache
    RewriteCond %{HTTP:Authorization} .+
    RewriteRule ^ - [E=HTTP_AUTHORIZATION:%0]

    # Redirect to URI without front controller to prevent duplicate content
    RewriteCond %{ENV:REDIRECT_STATUS} =""
    RewriteRule ^index\\.php(?:/(.*)|$) %{ENV:BASE}/$1 [R=301,L]

    # If the requested filename exists, simply serve it.
    RewriteCond %{REQUEST_FILENAME} -f
    RewriteRule ^ - [L]

    # Rewrite all other queries to the front controller.
    RewriteRule ^ %{ENV:BASE}/index.php [L]
</IfModule>

<IfModule !mod_rewrite.c>
    <IfModule mod_alias.c>
        RedirectMatch 307 ^/$ /index.php/
    </IfModule>
</IfModule>
"""
    files = {
        "public/.htaccess": htaccess,
        "public/index.php": front_controller("symfony"),
        "public/bundles/framework/css/structure.css": TINY_CSS,
        "public/build/app.js": LARGE_JS,
        "public/build/entrypoints.json": '{"entrypoints": {}}\n',
        "public/images/logo.png": PNG,
        ".env.local": "APP_SECRET=secret\n",
    }
    reqs = common_requests("/bundles/framework/css/structure.css", "/build/app.js", "/images/")
    reqs += [
        get("/blog"),
        get("/blog/my-post"),
        get("/blog/my-post?_locale=fr"),
        get("/index.php/blog"),
        get("/index.php"),
        get("/index.php/"),
        get("/_profiler/"),
        get("/_wdt/abc123"),
        get("/api/items", Accept="application/json"),
        get("/api/items", Authorization="Bearer tok"),
        Request("POST", "/api/items", {"Content-Type": "application/json"}, b"{}"),
        get("/build/entrypoints.json"),
        get("/images/logo.png"),
        get("/images"),
        get("/.env.local"),
        get("/../.env.local"),
        get("/bundles/"),
    ]
    return Site("symfony", "", files, reqs, public="public")


def drupal() -> Site:
    # Drupal's .htaccess: the parts a request meets (the mod_php and
    # per-PHP-version blocks are left out, as they do not apply to php-fpm).
    htaccess = r"""<FilesMatch "\.(engine|inc|install|make|module|profile|po|sh|.*sql|theme|twig|tpl(\.php)?|xtmpl|yml)(~|\.sw[op]|\.bak|\.orig|\.save)?$|^(\.(?!well-known).*|Entries.*|Repository|Root|Tag|Template|composer\.(json|lock)|web\.config|yarn\.lock|package\.json)$|^#.*#$|\.php(~|\.sw[op]|\.bak|\.orig|\.save)$">
  <IfModule mod_authz_core.c>
    Require all denied
  </IfModule>
  <IfModule !mod_authz_core.c>
    Order allow,deny
  </IfModule>
</FilesMatch>

Options -Indexes
Options +FollowSymLinks

ErrorDocument 404 /index.php

DirectoryIndex index.php index.html index.htm

AddType application/vnd.ms-fontobject    .eot
AddType application/x-font-ttf           .ttf
AddType application/x-font-opentype      .otf
AddType application/x-font-woff          .woff
AddType image/svg+xml                    .svg

<IfModule mod_expires.c>
  ExpiresActive On
  ExpiresDefault A1209600

  <FilesMatch \.php$>
    ExpiresActive Off
  </FilesMatch>
</IfModule>

<IfModule mod_rewrite.c>
  RewriteEngine on

  RewriteRule ^ - [E=protossl]
  RewriteCond %{HTTPS} on
  RewriteRule ^ - [E=protossl:s]

  RewriteRule ^ - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]

  RewriteRule "/\.|^\.(?!well-known/)" - [F]

  RewriteCond %{REQUEST_URI} ^(.*)?/(install\.php) [OR]
  RewriteCond %{REQUEST_URI} ^(.*)?/(rebuild\.php)
  RewriteCond %{REQUEST_URI} !core
  RewriteRule ^(.*)$ %1/core/%2 [L,QSA,R=301]

  RewriteRule ^core/install\.php core/install.php?rewrite=ok [QSA,L]

  RewriteCond %{REQUEST_FILENAME} !-f
  RewriteCond %{REQUEST_FILENAME} !-d
  RewriteCond %{REQUEST_URI} !=/favicon.ico
  RewriteRule ^ index.php [L]

  RewriteCond %{REQUEST_URI} !/core/[^/]*\.php$
  RewriteCond %{REQUEST_URI} !/core/modules/system/tests/https?\.php
  RewriteCond %{REQUEST_URI} !/core/modules/statistics/statistics\.php$
  RewriteRule "^(.+/.*|autoload)\.php($|/)" - [F]

  <IfModule mod_headers.c>
    RewriteCond %{HTTP:Accept-encoding} gzip
    RewriteCond %{REQUEST_FILENAME}\.gz -s
    RewriteRule ^(.*css_[a-zA-Z0-9-_]+)\.css$ $1\.css\.gz [QSA]

    RewriteCond %{HTTP:Accept-encoding} gzip
    RewriteCond %{REQUEST_FILENAME}\.gz -s
    RewriteRule ^(.*js_[a-zA-Z0-9-_]+)\.js$ $1\.js\.gz [QSA]

    RewriteRule \.css\.gz$ - [T=text/css,E=no-gzip:1]
    RewriteRule \.js\.gz$ - [T=text/javascript,E=no-gzip:1]

    <FilesMatch "(\.js\.gz|\.css\.gz)$">
      Header set Content-Encoding gzip
      Header append Vary Accept-Encoding
    </FilesMatch>
  </IfModule>
</IfModule>

<IfModule mod_headers.c>
  Header always set X-Content-Type-Options nosniff
  Header always set X-Frame-Options SAMEORIGIN
</IfModule>
"""
    import gzip as _gzip

    files = {
        ".htaccess": htaccess,
        "index.php": front_controller("drupal"),
        "update.php": front_controller("drupal-update"),
        "core/install.php": front_controller("drupal-install"),
        "core/rebuild.php": front_controller("drupal-rebuild"),
        "core/lib/Drupal.php": "<?php\n",
        "core/modules/system/system.module": "<?php\n",
        "core/misc/drupal.js": LARGE_JS,
        "core/misc/tiny.css": TINY_CSS,
        "core/misc/font.woff": b"wOFF" + bytes(60),
        "core/misc/icon.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
        "sites/default/settings.php": "<?php $databases = [];\n",
        "sites/default/files/css/css_abc123.css": TINY_CSS,
        "sites/default/files/css/css_abc123.css.gz": _gzip.compress(TINY_CSS.encode(), mtime=0),
        "sites/default/files/js/js_def456.js": LARGE_JS,
        "sites/default/files/js/js_def456.js.gz": _gzip.compress(LARGE_JS.encode(), mtime=0),
        "sites/default/files/photo.png": PNG,
        "composer.json": '{"name": "drupal/recommended-project"}\n',
        "web.config": "<configuration/>\n",
        "autoload.php": "<?php\n",
        "robots.txt": "User-agent: *\n",
        ".git/config": "[core]\n",
    }
    reqs = common_requests("/core/misc/tiny.css", "/core/misc/drupal.js", "/sites/default/files/")
    reqs += [
        get("/node/1"),
        get("/node/1/edit"),
        get("/user/login?destination=/node/1"),
        get("/admin/config"),
        get("/update.php"),
        get("/update.php/selection"),
        get("/install.php"),
        get("/rebuild.php"),
        get("/core/install.php"),
        get("/core/rebuild.php"),
        get("/core/lib/Drupal.php"),
        get("/core/modules/system/system.module"),
        get("/sites/default/settings.php"),
        get("/autoload.php"),
        get("/composer.json"),
        get("/web.config"),
        get("/robots.txt"),
        get("/favicon.ico"),
        get("/core/misc/font.woff"),
        get("/core/misc/icon.svg"),
        get("/sites/default/files/css/css_abc123.css"),
        get("/sites/default/files/css/css_abc123.css", **{"Accept-Encoding": "gzip"}),
        get("/sites/default/files/js/js_def456.js", **{"Accept-Encoding": "gzip"}),
        get("/sites/default/files/js/js_def456.js"),
        get("/sites/default/files/photo.png"),
        get("/.well-known/security.txt"),
        get("/sites/default/files/.htaccess"),
    ]
    return Site("drupal", "", files, reqs)


def nextcloud() -> Site:
    htaccess = r"""<IfModule mod_headers.c>
  <IfModule mod_setenvif.c>
    <IfModule mod_fcgid.c>
       SetEnvIfNoCase ^Authorization$ "(.+)" XAUTHORIZATION=$1
       RequestHeader set XAuthorization %{XAUTHORIZATION}e env=XAUTHORIZATION
    </IfModule>
  </IfModule>

  <If "%{REQUEST_URI} =~ /(\.css|\.js|\.mjs|\.svg|\.gif|\.png|\.jpg|\.ico|\.wasm|\.tflite)$/">
    Header set Cache-Control "max-age=15778463"
  </If>
  <If "%{REQUEST_URI} =~ /\.(css|js|mjs|svg|gif|png|jpg|ico|wasm|tflite)$/ && %{QUERY_STRING} =~ /(^|&)v=/">
    Header set Cache-Control "max-age=15778463, immutable"
  </If>
  <If "%{REQUEST_URI} =~ /(\.woff2?)$/">
    Header set Cache-Control "max-age=604800"
  </If>

  Header always set Referrer-Policy "no-referrer"
  Header always set X-Content-Type-Options "nosniff"
  Header always set X-Frame-Options "SAMEORIGIN"
  Header always set X-Robots-Tag "noindex, nofollow"
</IfModule>

<IfModule mod_rewrite.c>
  RewriteEngine on
  RewriteCond %{HTTP_USER_AGENT} DavClnt
  RewriteRule ^$ /remote.php/webdav/ [L,R=302]
  RewriteRule .* - [env=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
  RewriteRule ^\.well-known/carddav /remote.php/dav/ [R=301,L]
  RewriteRule ^\.well-known/caldav /remote.php/dav/ [R=301,L]
  RewriteRule ^remote/(.*) remote.php [QSA,L]
  RewriteRule ^(?:build|tests|config|lib|3rdparty|templates)/.* - [R=404,L]
  RewriteRule ^\.well-known/(?!acme-challenge|pki-validation) /index.php [QSA,L]
  RewriteRule ^ocm-provider/?$ index.php [QSA,L]
  RewriteRule ^(?:\.(?!well-known)|autotest|occ|issue|indie|db_|console).* - [R=404,L]
</IfModule>

AddDefaultCharset utf-8
Options -Indexes

<IfModule mod_mime.c>
  AddType image/svg+xml svg svgz
  AddType application/wasm wasm
  AddEncoding gzip svgz
</IfModule>

<IfModule mod_dir.c>
  DirectoryIndex index.php index.html
</IfModule>

ErrorDocument 403 /index.php/error/403
ErrorDocument 404 /index.php/error/404

<IfModule mod_rewrite.c>
  Options -MultiViews
  RewriteRule ^core/js/oc.js$ index.php [PT,E=PATH_INFO:$1]
  RewriteRule ^core/preview.png$ index.php [PT,E=PATH_INFO:$1]
  RewriteCond %{REQUEST_FILENAME} !\.(css|js|mjs|svg|gif|ico|jpg|jpeg|png|webp|html|otf|ttf|woff2?|map|webm|mp4|mp3|ogg|wav|flac|wasm|tflite)$
  RewriteCond %{REQUEST_FILENAME} !/core/ajax/update\.php
  RewriteCond %{REQUEST_FILENAME} !/core/img/(favicon\.ico|manifest\.json)$
  RewriteCond %{REQUEST_FILENAME} !/(cron|public|remote|status)\.php
  RewriteCond %{REQUEST_FILENAME} !/ocs/v(1|2)\.php
  RewriteCond %{REQUEST_FILENAME} !/robots\.txt
  RewriteCond %{REQUEST_FILENAME} !/(ocs-provider|updater)/
  RewriteCond %{REQUEST_URI} !^/\.well-known/(acme-challenge|pki-validation)/.*
  RewriteCond %{REQUEST_FILENAME} !/richdocumentscode(_arm64)?/proxy.php$
  RewriteRule . index.php [PT,E=PATH_INFO:$1]
  RewriteBase /
  <IfModule mod_env.c>
    SetEnv front_controller_active true
    <IfModule mod_dir.c>
      DirectorySlash off
    </IfModule>
  </IfModule>
</IfModule>
"""
    files = {
        ".htaccess": htaccess,
        "index.php": front_controller("nextcloud"),
        "remote.php": front_controller("nextcloud-remote"),
        "status.php": front_controller("nextcloud-status"),
        "public.php": front_controller("nextcloud-public"),
        "cron.php": front_controller("nextcloud-cron"),
        "ocs/v1.php": front_controller("nextcloud-ocs"),
        "ocs/v2.php": front_controller("nextcloud-ocs"),
        "core/js/main.js": LARGE_JS,
        "core/css/tiny.css": TINY_CSS,
        "core/img/logo.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
        "core/img/favicon.ico": PNG,
        "core/img/manifest.json": "{}\n",
        "core/img/logo.svgz": __import__("gzip").compress(b'<svg xmlns="http://www.w3.org/2000/svg"/>\n', mtime=0),
        "core/fonts/font.woff2": b"wOF2" + bytes(60),
        "core/ajax/update.php": front_controller("nextcloud-update"),
        "config/config.php": "<?php $CONFIG = [];\n",
        "lib/base.php": "<?php\n",
        "data/.htaccess": "Require all denied\n",
        "data/owncloud.log": "{}\n",
        "robots.txt": "User-agent: *\nDisallow: /\n",
        "occ": "<?php\n",
        "apps/files/js/files.js": LARGE_JS,
        "apps/files/img/app.png": PNG,
    }
    reqs = common_requests("/core/css/tiny.css", "/core/js/main.js", "/apps/files/img/")
    reqs += [
        get("/login"),
        get("/apps/files/"),
        get("/apps/files/?dir=/Photos"),
        get("/index.php/login"),
        get("/index.php/apps/files/"),
        get("/remote.php/dav/files/admin/"),
        Request("PROPFIND", "/remote.php/dav/files/admin/", {"Depth": "1"}),
        get("/remote.php/webdav/", Authorization="Basic YWRtaW46cHc="),
        get("/remote/webdav/x"),
        get("/status.php"),
        get("/ocs/v2.php/cloud/capabilities?format=json", **{"OCS-APIRequest": "true"}),
        get("/ocs/v1.php/cloud/user"),
        get("/cron.php"),
        get("/public.php/dav/files/token/"),
        get("/.well-known/carddav"),
        get("/.well-known/caldav"),
        get("/.well-known/webfinger"),
        get("/.well-known/nodeinfo"),
        get("/.well-known/acme-challenge/token"),
        get("/ocm-provider/"),
        get("/config/config.php"),
        get("/lib/base.php"),
        get("/data/owncloud.log"),
        get("/occ"),
        get("/core/img/logo.svg"),
        get("/core/img/logo.svgz"),
        get("/core/img/favicon.ico"),
        get("/core/img/manifest.json"),
        get("/core/fonts/font.woff2"),
        get("/core/js/main.js?v=abc123"),
        get("/apps/files/js/files.js?v=1"),
        get("/apps/files/img/app.png"),
        get("/core/ajax/update.php"),
        get("/core/js/oc.js"),
        get("/", **{"User-Agent": "Microsoft-WebDAV-MiniRedir DavClnt"}),
        get("/robots.txt"),
        get("/core"),
    ]
    return Site("nextcloud", "", files, reqs)


def joomla() -> Site:
    # Joomla's htaccess.txt, renamed to .htaccess as its installer says.
    htaccess = r"""Options +FollowSymlinks
Options -Indexes

<IfModule mod_headers.c>
    Header always set X-Content-Type-Options "nosniff"
</IfModule>

RewriteEngine On

## Begin - Rewrite rules to block out some common exploits.
RewriteCond %{QUERY_STRING} base64_encode[^(]*\([^)]*\) [OR]
RewriteCond %{QUERY_STRING} (<|%3C)([^s]*s)+cript.*(>|%3E) [NC,OR]
RewriteCond %{QUERY_STRING} GLOBALS(=|\[|\%[0-9A-Z]{0,2}) [OR]
RewriteCond %{QUERY_STRING} _REQUEST(=|\[|\%[0-9A-Z]{0,2})
RewriteRule .* index.php [F]
## End - Rewrite rules to block out some common exploits.

RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]

## Begin - Joomla! core SEF Section.
RewriteCond %{REQUEST_URI} !^/index\.php
RewriteCond %{REQUEST_FILENAME} !-f
RewriteCond %{REQUEST_FILENAME} !-d
RewriteRule .* index.php [L]
## End - Joomla! core SEF Section.

<IfModule mod_headers.c>
    <FilesMatch "\.(js|css)\.gz$">
        Header append Vary Accept-Encoding
    </FilesMatch>
</IfModule>
"""
    files = {
        ".htaccess": htaccess,
        "index.php": front_controller("joomla"),
        "administrator/index.php": front_controller("joomla-admin"),
        "configuration.php": "<?php class JConfig { public $password = 'secret'; }\n",
        "media/system/js/core.js": LARGE_JS,
        "media/system/css/tiny.css": TINY_CSS,
        "images/joomla_black.png": PNG,
        "htaccess.txt": htaccess,
        "web.config.txt": "<configuration/>\n",
        "robots.txt.dist": "User-agent: *\n",
        "api/index.php": front_controller("joomla-api"),
        ".git/config": "[core]\n",
    }
    reqs = common_requests("/media/system/css/tiny.css", "/media/system/js/core.js", "/images/")
    reqs += [
        get("/component/content/article/1"),
        get("/index.php/component/content/?view=featured"),
        get("/index.php?option=com_content&view=article&id=1"),
        get("/blog/first-article"),
        get("/administrator/"),
        get("/administrator"),
        get("/administrator/index.php?option=com_login"),
        get("/api/index.php/v1/content/articles"),
        get("/api/index.php/v1/content/articles", Authorization="Bearer abc"),
        get("/configuration.php"),
        get("/htaccess.txt"),
        get("/robots.txt.dist"),
        get("/images/joomla_black.png"),
        get("/?q=base64_encode(abc)"),
        get("/?q=%3Cscript%3Ealert(1)%3C/script%3E"),
        get("/index.php?GLOBALS=1"),
        get("/index.php?_REQUEST[a]=1"),
        get("/search?q=normal"),
        Request("POST", "/index.php?option=com_users&task=user.login", {"Content-Type": "application/x-www-form-urlencoded"}, b"username=a"),
    ]
    return Site("joomla", "", files, reqs)


def mediawiki() -> Site:
    # MediaWiki's short URLs as its manual gives them for a vhost (/wiki/Page
    # served by /w/index.php), and the .htaccess files it ships to deny its
    # own directories and keep uploads from running.
    vhost = r"""RewriteEngine On
    RewriteRule ^/?wiki(/.*)?$ %{DOCUMENT_ROOT}/w/index.php [L]
    RewriteRule ^/?$ %{DOCUMENT_ROOT}/w/index.php [L]
    <Directory {root}/w/images>
        AllowOverride FileInfo
        AddType text/plain .html .htm .shtml .phtml .php .php3 .php4 .php5 .php7 .phps
        <FilesMatch "\.(?:php|phtml|php3|php4|php5|php7|phps)$">
            SetHandler None
        </FilesMatch>
        Header set X-Content-Type-Options nosniff
        <IfModule mod_php.c>
            php_admin_flag engine off
        </IfModule>
    </Directory>"""
    files = {
        "w/index.php": front_controller("mediawiki"),
        "w/load.php": front_controller("mediawiki-load"),
        "w/api.php": front_controller("mediawiki-api"),
        "w/rest.php": front_controller("mediawiki-rest"),
        "w/LocalSettings.php": "<?php $wgSecretKey = 'secret';\n",
        "w/includes/.htaccess": "Require all denied\n",
        "w/includes/Setup.php": "<?php\n",
        "w/cache/.htaccess": "Require all denied\n",
        "w/cache/l10n_cache-en.cdb": "cdb\n",
        "w/maintenance/.htaccess": "Require all denied\n",
        "w/maintenance/update.php": "<?php\n",
        "w/images/.htaccess": "<IfModule rewrite_module>\n\tRewriteEngine On\n\tRewriteOptions inherit\n"
        "\tRewriteCond %{QUERY_STRING} \\.[^\\\\/:*?\\x22<>|%]+(#|\\?|$) [nocase]\n\tRewriteRule . - [forbidden]\n</IfModule>\n",
        "w/images/a/a9/Example.png": PNG,
        "w/images/evil.php": "<?php echo 'ran';\n",
        "w/images/page.html": "<p>uploaded</p>\n",
        "w/resources/lib/jquery/jquery.js": LARGE_JS,
        "w/resources/src/tiny.css": TINY_CSS,
        "w/skins/Vector/resources/skin.css": TINY_CSS,
        "w/README.md": "# MediaWiki\n",
        "w/composer.json": "{}\n",
    }
    reqs = common_requests("/w/resources/src/tiny.css", "/w/resources/lib/jquery/jquery.js", "/w/skins/Vector/resources/", prefix="/w")
    reqs += [
        get("/"),
        get("/wiki/Main_Page"),
        get("/wiki/Special:Search?search=apache"),
        get("/wiki/Talk:Main_Page"),
        get("/wiki/File:Example.png"),
        get("/wiki/A/B/C"),
        get("/wiki/%C3%89t%C3%A9"),
        get("/wiki/%C9t%E9"),
        get("/wiki"),
        get("/wiki/"),
        get("/w/index.php?title=Main_Page&action=edit"),
        get("/w/load.php?modules=startup&only=scripts"),
        get("/w/api.php?action=query&format=json"),
        Request("POST", "/w/api.php", {"Content-Type": "application/x-www-form-urlencoded"}, b"action=login"),
        get("/w/rest.php/v1/page/Main_Page"),
        get("/w/LocalSettings.php"),
        get("/w/includes/Setup.php"),
        get("/w/cache/l10n_cache-en.cdb"),
        get("/w/maintenance/update.php"),
        get("/w/images/a/a9/Example.png"),
        get("/w/images/evil.php"),
        get("/w/images/a/a9/Example.png?x.php"),
        get("/w/images/page.html"),
        get("/w/images/"),
        get("/w/README.md"),
        get("/w/composer.json"),
    ]
    return Site("mediawiki", vhost, files, reqs)


def dokuwiki(debian_htaccess: str) -> Site:
    # Debian's /etc/dokuwiki/htaccess with its nice-URL block switched on
    # (userewrite=1), RewriteBase at the site's root.
    lines = []
    for line in debian_htaccess.splitlines():
        if re.match(r"#(Rewrite|Options)", line):
            line = line[1:]
        if line.startswith("RewriteBase"):
            line = "RewriteBase /"
        lines.append(line)
    files = {
        ".htaccess": "\n".join(lines) + "\n",
        "doku.php": front_controller("dokuwiki"),
        "feed.php": front_controller("dokuwiki-feed"),
        "index.php": "<?php header('Location: doku.php'); exit;\n",
        "lib/exe/fetch.php": front_controller("dokuwiki-fetch"),
        "lib/exe/detail.php": front_controller("dokuwiki-detail"),
        "lib/exe/xmlrpc.php": front_controller("dokuwiki-xmlrpc"),
        "lib/exe/css.php": front_controller("dokuwiki-css"),
        "lib/scripts/script.js": LARGE_JS,
        "lib/tpl/dokuwiki/tiny.css": TINY_CSS,
        "lib/images/logo.png": PNG,
        "README": "DokuWiki\n",
        "VERSION": "2024-02-06a\n",
        "COPYING": "GPL\n",
        "_htaccess": "x\n",
        "conf/local.php": "<?php $conf['userewrite'] = 1;\n",
        "data/pages/start.txt": "====== Start ======\n",
        "data/.htaccess": "Require all denied\n",
        "conf/.htaccess": "Require all denied\n",
        ".git/config": "[core]\n",
    }
    reqs = common_requests("/lib/tpl/dokuwiki/tiny.css", "/lib/scripts/script.js", "/lib/images/")
    reqs += [
        get("/start"),
        get("/wiki:syntax"),
        get("/playground/playground?do=edit"),
        get("/_media/wiki:logo.png"),
        get("/_media/wiki:logo.png?w=100"),
        get("/_detail/wiki:logo.png?id=start"),
        get("/_export/raw/start"),
        get("/_export/xhtml/wiki/syntax"),
        get("/doku.php?id=start"),
        get("/doku.php/start"),
        get("/feed.php"),
        get("/lib/exe/xmlrpc.php"),
        get("/lib/exe/css.php?t=dokuwiki"),
        get("/README"),
        get("/VERSION"),
        get("/COPYING"),
        get("/_htaccess"),
        get("/conf/local.php"),
        get("/data/pages/start.txt"),
        get("/.git/HEAD"),
        get("/lib/images/logo.png"),
        get("/lib/"),
    ]
    return Site("dokuwiki", "", files, reqs)


def manual() -> Site:
    # Content negotiation as apache2-doc's /manual sets it up: MultiViews
    # with Debian's AddLanguage/LanguagePriority, a type map.
    vhost = """<Directory {root}>
        Options Indexes FollowSymLinks MultiViews
        AllowOverride None
        Require all granted
    </Directory>
    AddHandler type-map .var"""
    page = lambda lang, text: f"<html lang=\"{lang}\"><body>{text}</body></html>\n"
    files = {
        "index.html.en": page("en", "Apache manual"),
        "index.html.fr": page("fr", "Manuel Apache"),
        "index.html.de": page("de", "Apache-Handbuch"),
        "index.html.ja.utf8": page("ja", "Apache manual ja"),
        "mod/core.html.en": page("en", "core"),
        "mod/core.html.fr": page("fr", "noyau"),
        "mod/core.html.es": page("es", "nucleo"),
        "mod/only-en.html.en": page("en", "only english"),
        "mod/index.html": page("en", "modules"),
        "style/css/manual.css": TINY_CSS,
        "style/scripts/prettify.js": LARGE_JS,
        "images/feather.png": PNG,
        "hello.var": "URI: hello\n\nURI: hello.html.en\nContent-type: text/html\nContent-language: en\n\n"
        "URI: hello.html.fr\nContent-type: text/html\nContent-language: fr\n",
        "hello.html.en": page("en", "Hello"),
        "hello.html.fr": page("fr", "Bonjour"),
        "notes.txt.en": "notes in english\n",
        "notes.txt.de": "Notizen\n",
        "index.php": front_controller("manual"),
    }
    reqs = common_requests("/style/css/manual.css", "/style/scripts/prettify.js", "/images/")
    langs = ["en", "fr", "de", "fr;q=0.9, en;q=0.8", "de-DE, de;q=0.9", "ja", "es", "pt-BR", "*", "xx", ""]
    for target in ["/index.html", "/mod/core.html", "/mod/core", "/hello.var", "/hello", "/notes.txt"]:
        for lang in langs:
            reqs.append(get(target, **({"Accept-Language": lang} if lang else {})))
    reqs += [
        get("/index.html.fr"),
        get("/index.html.en", **{"Accept-Language": "fr"}),
        get("/index", **{"Accept-Language": "de"}),
        get("/mod/only-en", **{"Accept-Language": "fr"}),
        get("/mod/only-en.html", **{"Accept-Language": "fr"}),
        get("/mod/"),
        get("/mod"),
        get("/mod/core.html", Accept="text/plain"),
        get("/mod/core.html", **{"Accept-Language": "fr", "Accept-Encoding": "gzip"}),
        get("/missing.html", **{"Accept-Language": "fr"}),
        get("/notes", **{"Accept-Language": "de"}),
        get("/style/"),
    ]
    return Site("manual", vhost, files, reqs)


def debian_default() -> list:
    """Requests for Debian's 000-default (plain) and default-ssl (TLS)
    vhosts, on the docroot Debian installs (its index.html)."""
    reqs = [
        get("/"),
        Request("HEAD", "/"),
        get("/", **{"Accept-Encoding": "gzip"}),
        get("/index.html"),
        get("/index.html", **{"Accept-Encoding": "br"}),
        get("/missing"),
        get("/missing.php"),
        get("/icons/"),
        get("/icons/README"),
        get("/icons/README.html"),
        get("/icons/apache_pb.png"),
        get("/icons/small/"),
        get("/icons"),
        get("/server-status"),
        get("/server-status?auto"),
        get("/cgi-bin/"),
        get("/cgi-bin/missing.cgi"),
        get("/.htaccess"),
        get("/%2e%2e/etc/passwd"),
        get("/../etc/passwd"),
        get("/#x"),
        get("/index.html#x"),
        Request("OPTIONS", "/"),
        Request("OPTIONS", "*"),
        Request("POST", "/", {"Content-Type": "text/plain"}, b"x"),
        Request("PUT", "/index.html", {"Content-Type": "text/plain"}, b"x"),
        Request("TRACE", "/"),
        get("/subdir"),
        get("/subdir/"),
        get("/info.php"),
        get("/info.php/path"),
        get("/.ph"),
        get("/x.phps"),
    ]
    tls = [
        Request("GET", "/", tls=True),
        Request("HEAD", "/", tls=True),
        Request("GET", "/index.html", {"Accept-Encoding": "gzip"}, tls=True),
        Request("GET", "/missing", tls=True),
        Request("GET", "/info.php", tls=True),
        Request("GET", "/info.php/x", tls=True),
        Request("GET", "/icons/", tls=True),
        Request("GET", "/subdir", tls=True),
        Request("OPTIONS", "/", tls=True),
        Request("POST", "/", {"Content-Type": "text/plain"}, b"x", tls=True),
    ]
    return reqs + tls
