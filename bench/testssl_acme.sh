#!/usr/bin/env bash
# testssl.sh against a certificate warren obtained itself (mod_md) from
# Debian's pebble: pebble and pebble-challtestsrv (every name is
# 127.0.0.1) on loopback ports, warren managing a.test with http-01 on its
# plain port; once the Pebble certificate is served, bench/testssl.sh runs
# against a.test on warren's TLS port (TARGET), with its exclusions (a
# test CA: no trusted chain, no OCSP or CRL, no CT, no DNS).
# Usage: bench/testssl_acme.sh [WARREN_BINARY]   (default: target/debug/warren)
# Environment: MPM (default event).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN=$(realpath -m "${1:-target/debug/warren}")
[ -x "$BIN" ] || cargo build -p warren
need pebble:pebble pebble-challtestsrv:pebble openssl:openssl testssl:testssl.sh jq:jq
MPM=${MPM:-event}
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
HTTP=$(port); HTTPS=$(port); CA=$(port); MGMT=$(port); DNS=$(port); DNSMGMT=$(port)

D=$(mktemp -d /tmp/warren-testssl-acme.XXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do { kill "$p" && wait "$p"; } 2>/dev/null || true; done; rm -rf "$D"; }
trap cleanup EXIT
# Pebble's own listener: a certificate for 127.0.0.1 from a CA warren trusts.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj /CN=listener-ca \
    -keyout "$D/ca.key" -out "$D/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$D/listener.key" -out "$D/listener.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$D/listener.ext"
openssl x509 -req -in "$D/listener.csr" -CA "$D/ca.pem" -CAkey "$D/ca.key" -CAcreateserial -days 30 \
    -extfile "$D/listener.ext" -out "$D/listener.pem" 2>/dev/null
pebble-challtestsrv -defaultIPv4 127.0.0.1 -defaultIPv6 "" -http01 "" -https01 "" -tlsalpn01 "" \
    -dns01 "127.0.0.1:$DNS" -management "127.0.0.1:$DNSMGMT" > "$D/dns.log" 2>&1 & PIDS+=($!)
printf '{"pebble": {"listenAddress": "127.0.0.1:%s", "managementListenAddress": "127.0.0.1:%s", "certificate": "%s", "privateKey": "%s", "httpPort": %s, "tlsPort": %s, "ocspResponderURL": "", "externalAccountBindingRequired": false}}\n' \
    "$CA" "$MGMT" "$D/listener.pem" "$D/listener.key" "$HTTP" "$HTTPS" > "$D/pebble.json"
PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 pebble -config "$D/pebble.json" -dnsserver "127.0.0.1:$DNS" > "$D/pebble.log" 2>&1 & PIDS+=($!)
for _ in $(seq 200); do curl -s --max-time 1 --cacert "$D/ca.pem" "https://127.0.0.1:$CA/dir" >/dev/null && break; sleep 0.1; done

mkdir -p "$D/htdocs"
echo hello > "$D/htdocs/index.html"
chmod -R a+rX "$D"
printf '%s\n' "LoadModule mpm_${MPM}_module x" "Listen 127.0.0.1:$HTTP" "Listen 127.0.0.1:$HTTPS" "ServerName localhost" \
    "DocumentRoot htdocs" "PidFile w.pid" "ErrorLog error.log" "User nobody" "Group nogroup" \
    "MDomain a.test" "MDCertificateAuthority https://127.0.0.1:$CA/dir" "MDCACertificateFile $D/ca.pem" \
    "MDContactEmail admin@a.test" "MDCertificateAgreement accepted" "MDStoreDir md" \
    "<VirtualHost *:$HTTP>" "ServerName a.test" "</VirtualHost>" \
    "<VirtualHost *:$HTTPS>" "ServerName a.test" "SSLEngine on" "</VirtualHost>" > "$D/w.conf"
"$BIN" -f "$D/w.conf" & PIDS+=($!)
issuer=
for _ in $(seq 600); do
    issuer=$(timeout 10 openssl s_client -connect "127.0.0.1:$HTTPS" -servername a.test < /dev/null 2>/dev/null | grep '^issuer=' || true)
    case $issuer in *Pebble*) break ;; esac
    sleep 0.1
done
case $issuer in *Pebble*) echo "warren serves the Pebble certificate ($issuer)" ;; *) echo "no Pebble certificate within 60 s:"; cat "$D/error.log"; exit 2 ;; esac
TARGET="a.test:$HTTPS" bench/testssl.sh "$BIN"
