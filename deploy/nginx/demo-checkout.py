#!/usr/bin/env python3
"""A stand-in for the checkout behind the gate (deploy/run.sh --nginx starts it on
127.0.0.1:8090 when nothing listens there): every page says who the gate let in, from the
X-Pushonce-User, -Resource and -Admission headers nginx passes on. Not for production:
the operator's own app takes its place (deploy/nginx/pushonce.conf, upstream
pushonce_checkout)."""
import html
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Checkout(BaseHTTPRequestHandler):
    def do_GET(self):
        user = self.headers.get("X-Pushonce-User", "")
        resource = self.headers.get("X-Pushonce-Resource", "")
        admission = self.headers.get("X-Pushonce-Admission", "")
        body = (
            "<!doctype html><meta charset=utf-8><title>checkout</title>"
            "<h1>Checkout</h1>"
            f"<p id=user>Admitted as <b>{html.escape(user)}</b> with "
            f"<b>{html.escape(resource)}</b> (admission {html.escape(admission)}).</p>"
            "<p>Every request here passed the gate; the admission's lease is renewed by each.</p>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("checkout: " + fmt % args + "\n")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8090
    ThreadingHTTPServer(("127.0.0.1", port), Checkout).serve_forever()
