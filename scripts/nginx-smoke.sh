#!/usr/bin/env bash
# By-hand check of the reference server binary behind nginx: the public URL
# (issuer, endpoints, DPoP htu, Location) comes from the proxy's forwarding
# headers only when the proxy is a -trusted-proxy, a path prefix comes from
# -issuer, and large or slow bodies are answered with a 4xx, never a 5xx.
# It prints one line a check and exits 1 when one failed. Not part of CI
# (.ci/run does not run it): it needs nginx and, for the client part, Node.
#
#   apt-get install -y nginx                        # once; the script starts its own nginx
#   (cd scripts/oidc-clients && npm ci)             # once, optional: runs openid-client too
#   scripts/nginx-smoke.sh
#
# Everything listens on 127.0.0.1, on ports PORT_BASE (default 18180) to
# PORT_BASE+13; the script stops the nginx and the two servers it started.
# A second loopback address (127.0.0.2) plays a client that is not the
# trusted proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
P=${PORT_BASE:-18180}
direct=$P                 # the binary, -trusted-proxy 127.0.0.1, no -issuer
fixed=$((P + 1))          # the binary with -issuer http://127.0.0.1:$prefixed/auth
xfwd=$((P + 10))          # nginx: X-Forwarded-Proto/-Host/-Port
rfc7239=$((P + 11))       # nginx: Forwarded (RFC 7239), set
appended=$((P + 12))      # nginx: Forwarded, appended to the client's
prefixed=$((P + 13))      # nginx: the server under /auth/ (with -issuer)

command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install -y nginx)" >&2; exit 2; }
work=$(mktemp -d /tmp/nginx-smoke.XXXXXX)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building the binary into $work ..." >&2
go build -o "$work/mockserver" ./mockserver/cmd/mockserver
fixture=$repo/scripts/oidc-clients/fixture.json
"$work/mockserver" -addr 127.0.0.1:$direct -fixture "$fixture" -trusted-proxy 127.0.0.1 \
	-read-timeout 5s >"$work/direct.out" 2>"$work/direct.log" &
pids+=($!)
"$work/mockserver" -addr 127.0.0.1:$fixed -fixture "$fixture" -issuer "http://127.0.0.1:$prefixed/auth" \
	>"$work/fixed.out" 2>"$work/fixed.log" &
pids+=($!)

mkdir -p "$work/tmp"
chmod 755 "$work" # nginx's workers may run as another user
chmod 777 "$work/tmp"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log error;
events { worker_connections 256; }
http {
  access_log $work/access.log;
  client_body_temp_path $work/tmp/body;
  proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fastcgi;
  uwsgi_temp_path $work/tmp/uwsgi;
  scgi_temp_path $work/tmp/scgi;
  client_body_timeout 3s;

  # The usual X-Forwarded-* configuration. Each header is set, so what a
  # client sends in its place never reaches the server.
  server {
    listen 127.0.0.1:$xfwd;
    client_max_body_size 4m; # larger than the server's 1 MiB: the server's own 400 shows
    proxy_set_header Host \$http_host;
    proxy_set_header X-Forwarded-Proto \$scheme;
    proxy_set_header X-Forwarded-Host \$host;
    proxy_set_header X-Forwarded-Port \$server_port;
    proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    proxy_set_header Forwarded "";
    location / { proxy_pass http://127.0.0.1:$direct; }
    location /unbuffered/ {
      proxy_pass http://127.0.0.1:$direct/;
      proxy_request_buffering off;
      proxy_http_version 1.1;
      client_body_timeout 10s; # the server's -read-timeout (5s) answers first
    }
    # X-Forwarded-Prefix is not one of the headers the server reads
    # (docs/reference-server.md, the public URL): a prefix comes from -issuer (server $prefixed).
    location /auth/ {
      proxy_pass http://127.0.0.1:$direct/;
      # A location's proxy_set_header replaces all the server's.
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
      proxy_set_header X-Forwarded-Port \$server_port;
      proxy_set_header Forwarded "";
      proxy_set_header X-Forwarded-Prefix /auth;
    }
  }

  # RFC 7239 only.
  server {
    listen 127.0.0.1:$rfc7239;
    proxy_set_header Forwarded "for=\$remote_addr;proto=\$scheme;host=\"\$http_host\"";
    proxy_set_header X-Forwarded-Proto "";
    proxy_set_header X-Forwarded-Host "";
    proxy_set_header X-Forwarded-Port "";
    location / { proxy_pass http://127.0.0.1:$direct; }
  }

  # RFC 7239, the proxy's element appended to what the client sent: the
  # server reads the last element, the proxy's.
  server {
    listen 127.0.0.1:$appended;
    proxy_set_header Forwarded "\$http_forwarded, for=\$remote_addr;proto=\$scheme;host=\"\$http_host\"";
    proxy_set_header X-Forwarded-Proto "";
    proxy_set_header X-Forwarded-Host "";
    proxy_set_header X-Forwarded-Port "";
    location / { proxy_pass http://127.0.0.1:$direct; }
  }

  # Under a path prefix: the server runs with -issuer http://127.0.0.1:$prefixed/auth
  # and the proxy strips /auth, also from the well-known URIs that RFC 8414
  # and AuthZEN put before the issuer's path.
  server {
    listen 127.0.0.1:$prefixed;
    location /auth/ { proxy_pass http://127.0.0.1:$fixed/; }
    location /.well-known/oauth-authorization-server/auth/ {
      proxy_pass http://127.0.0.1:$fixed/.well-known/oauth-authorization-server/;
    }
    location /.well-known/authzen-configuration/auth/ {
      proxy_pass http://127.0.0.1:$fixed/.well-known/authzen-configuration/;
    }
  }
}
EOF
nginx -t -q -p "$work" -c "$work/nginx.conf"
nginx -p "$work" -c "$work/nginx.conf" &
pids+=($!)

# Wait for the servers and nginx to answer.
for base in "http://127.0.0.1:$direct" "http://127.0.0.1:$fixed" "http://127.0.0.1:$xfwd" "http://127.0.0.1:$prefixed/auth"; do
	for _ in $(seq 100); do
		curl -sf -o /dev/null "$base/realms/master/.well-known/openid-configuration" && break
		sleep 0.1
	done
done

failures=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() { printf 'FAIL  %s\n' "$1"; failures=$((failures + 1)); }
expect() { # name want got
	if [[ "$3" == "$2" ]]; then pass "$1: $3"; else fail "$1: got '$3', want '$2'"; fi
}
json() { # field: reads JSON on stdin
	python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1"
}
iss_of_token() { # reads a token response on stdin
	python3 -c 'import json,sys,base64; t=json.load(sys.stdin)["access_token"].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(t+"=="))["iss"])'
}
forged=(-H "X-Forwarded-Host: evil.test" -H "X-Forwarded-Proto: https" -H "X-Forwarded-Port: 8443" -H "Forwarded: proto=https;host=evil.test")

echo "== discovery names the public URL"
for base in "http://127.0.0.1:$xfwd" "http://127.0.0.1:$rfc7239" "http://127.0.0.1:$appended" "http://127.0.0.1:$prefixed/auth"; do
	expect "openid-configuration issuer via $base" "$base/realms/acme" \
		"$(curl -s "$base/realms/acme/.well-known/openid-configuration" | json issuer)"
	expect "token_endpoint via $base" "$base/realms/acme/protocol/openid-connect/token" \
		"$(curl -s "$base/realms/acme/.well-known/openid-configuration" | json token_endpoint)"
	expect "  ... with forged forwarding headers from the client" "$base/realms/acme" \
		"$(curl -s "${forged[@]}" "$base/realms/acme/.well-known/openid-configuration" | json issuer)"
done
for host in "http://127.0.0.1:$xfwd" "http://127.0.0.1:$prefixed/auth"; do
	origin=${host%/auth}
	path=${host#"$origin"}
	expect "RFC 8414 metadata ($origin/.well-known/oauth-authorization-server$path/realms/acme)" "$host/realms/acme" \
		"$(curl -s "$origin/.well-known/oauth-authorization-server$path/realms/acme" | json issuer)"
	expect "AuthZEN metadata ($origin/.well-known/authzen-configuration$path/realms/acme)" "$host/realms/acme" \
		"$(curl -s "$origin/.well-known/authzen-configuration$path/realms/acme" | json policy_decision_point)"
done
expect "X-Forwarded-Prefix is not read (a prefix needs -issuer)" "http://127.0.0.1:$xfwd/realms/acme" \
	"$(curl -s "http://127.0.0.1:$xfwd/auth/realms/acme/.well-known/openid-configuration" | json issuer)"

echo "== forwarding headers count only from the trusted proxy"
if curl -s -o /dev/null --interface 127.0.0.2 "http://127.0.0.1:$direct/"; then
	expect "direct from 127.0.0.2 (untrusted), forged headers: issuer" "http://127.0.0.1:$direct/realms/acme" \
		"$(curl -s --interface 127.0.0.2 "${forged[@]}" "http://127.0.0.1:$direct/realms/acme/.well-known/openid-configuration" | json issuer)"
	expect "direct from 127.0.0.2 (untrusted), forged headers: token iss" "http://127.0.0.1:$direct/realms/acme" \
		"$(curl -s --interface 127.0.0.2 "${forged[@]}" -u orders-api:orders-secret -d grant_type=client_credentials \
			"http://127.0.0.1:$direct/realms/acme/protocol/openid-connect/token" | iss_of_token)"
else
	fail "cannot send from 127.0.0.2: the untrusted-peer checks did not run"
fi
expect "direct from 127.0.0.1 (the trusted proxy's address): headers honoured" "https://evil.test:8443/realms/acme" \
	"$(curl -s -H "X-Forwarded-Host: evil.test" -H "X-Forwarded-Proto: https" -H "X-Forwarded-Port: 8443" \
		"http://127.0.0.1:$direct/realms/acme/.well-known/openid-configuration" | json issuer)"

echo "== Location is absolute on the public URL"
for base in "http://127.0.0.1:$xfwd" "http://127.0.0.1:$rfc7239" "http://127.0.0.1:$prefixed/auth"; do
	admin=$(curl -s -d grant_type=client_credentials -d client_id=platform-admin -d client_secret=admin-secret \
		"$base/realms/master/protocol/openid-connect/token" | json access_token)
	name="smoke-$RANDOM"
	location=$(curl -s -o /dev/null -w '%header{location}' -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$name\",\"plan\":\"free\",\"adminEmail\":\"admin@$name.test\"}" "$base/admin/tenants")
	if [[ "$location" == "$base/admin/tenants/"* ]]; then pass "POST /admin/tenants via $base: Location $location"; else fail "POST /admin/tenants via $base: Location '$location'"; fi
	expect "  GET Location" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $admin" "$location")"
	expect "  DELETE Location" 200 "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $admin" "$location")"
done

echo "== large bodies: a 4xx, never a 5xx"
head -c $((600 << 10)) /dev/zero | tr '\0' a | sed 's/^/{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"x":"/; s/$/"}}}/' >"$work/600k.json"
head -c $((2 << 20)) /dev/zero | tr '\0' a | sed 's/^/{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"x":"/; s/$/"}}}/' >"$work/2m.json"
head -c $((5 << 20)) /dev/zero | tr '\0' a >"$work/5m.json"
decision=/realms/acme/authorization-decision-provider/authorize
token=$(curl -s -u orders-api:orders-secret -d grant_type=client_credentials \
	"http://127.0.0.1:$xfwd/realms/acme/protocol/openid-connect/token" | json access_token)
post() { # base body content-type [curl args...]: prints the status
	local base=$1 body=$2 type=$3
	shift 3
	curl -s -o /dev/null -w '%{http_code}' -H "Content-Type: $type" "$@" --data-binary "@$body" "$base$decision"
}
for i in 1 2 3 4 5; do
	expect "600 KiB, no credentials, via nginx (run $i)" 401 "$(post "http://127.0.0.1:$xfwd" "$work/600k.json" application/json)"
	expect "600 KiB, refused token, via nginx (run $i)" 401 "$(post "http://127.0.0.1:$xfwd" "$work/600k.json" application/json -H "Authorization: Bearer x$token")"
	expect "600 KiB, text/plain, via nginx (run $i)" 415 "$(post "http://127.0.0.1:$xfwd" "$work/600k.json" text/plain -H "Authorization: Bearer $token")"
	expect "2 MiB (over the server's 1 MiB), via nginx (run $i)" 400 "$(post "http://127.0.0.1:$xfwd" "$work/2m.json" application/json -H "Authorization: Bearer $token")"
done
expect "600 KiB, good token, via nginx" 200 "$(post "http://127.0.0.1:$xfwd" "$work/600k.json" application/json -H "Authorization: Bearer $token")"
expect "2 MiB chunked, refused token, via nginx" 401 "$(post "http://127.0.0.1:$xfwd" "$work/2m.json" application/json -H "Authorization: Bearer x$token" -H 'Transfer-Encoding: chunked')"
expect "5 MiB (over nginx's 4m), via nginx" 413 "$(post "http://127.0.0.1:$xfwd" "$work/5m.json" application/json -H "Authorization: Bearer $token")"
direct_token=$(curl -s -u orders-api:orders-secret -d grant_type=client_credentials \
	"http://127.0.0.1:$direct/realms/acme/protocol/openid-connect/token" | json access_token)
expect "2 MiB, direct" 400 "$(post "http://127.0.0.1:$direct" "$work/2m.json" application/json -H "Authorization: Bearer $direct_token")"

echo "== slow bodies: a 4xx or a closed connection, never a 5xx"
slow() { # port path token: sends 12 of 100 promised body bytes, prints the status line or "closed"
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$1"
	printf 'POST %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"clientId":' \
		"$2" "$1" "$3" >&3
	line=$(timeout 20 head -n1 <&3 | tr -d '\r') || true
	exec 3<&- 3>&-
	echo "${line:-closed}"
}
expect "slow body via nginx (nginx's client_body_timeout 3s: 408, logged, connection closed)" closed "$(slow $xfwd $decision "$token")"
expect "slow body via nginx, unbuffered (the server's -read-timeout 5s)" "HTTP/1.1 400 Bad Request" "$(slow $xfwd /unbuffered$decision "$token")"
expect "slow body direct (the server's -read-timeout 5s)" "HTTP/1.1 400 Bad Request" "$(slow $direct $decision "$direct_token")"
if grep -q '" 5[0-9][0-9] ' "$work/access.log"; then
	fail "nginx logged a 5xx: $(grep '" 5[0-9][0-9] ' "$work/access.log" | head -3)"
else
	pass "nginx logged no 5xx"
fi

echo "== openid-client 6 through nginx (scripts/oidc-clients)"
if [[ -d scripts/oidc-clients/node_modules/openid-client ]]; then
	for base in "http://127.0.0.1:$xfwd" "http://127.0.0.1:$rfc7239" "http://127.0.0.1:$appended" "http://127.0.0.1:$prefixed/auth"; do
		if out=$(node scripts/oidc-clients/smoke.mjs "$base" 2>&1); then
			pass "openid-client via $base: $(tail -1 <<<"$out")"
		else
			fail "openid-client via $base:"$'\n'"$(grep -v '^PASS' <<<"$out")"
		fi
	done
else
	echo "SKIP  openid-client: run (cd scripts/oidc-clients && npm ci) first"
fi

echo
if ((failures)); then
	echo "$failures failed (nginx error log: $(grep -c . "$work/error.log" || true) lines)"
	sed -n '1,20p' "$work/error.log"
	exit 1
fi
echo "all passed"
