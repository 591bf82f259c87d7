#!/usr/bin/env bash
# 03 — What are the gradient arguments: y = 3a + 2b^2 + log(c) (tutorials/03_gradient_arguments.py)
# Run: bash examples/curl/03_gradient_arguments.sh (the server: $B, else B below). Needs only curl.
set -euo pipefail
B=${B:-http://127.0.0.1:8000}
N=tutorial-$$                                       # a fresh session, dropped on exit
S=$B/v1/sessions/$N
J="Content-Type: application/json"
curl -sSf -X POST "$B/v1/sessions" -H "$J" -d "{\"name\": \"$N\"}" -o /dev/null
trap 'curl -s -X DELETE "$S" -o /dev/null' EXIT

put() { curl -sSf -X PUT "$S/tensors/$1" -H "$J" -d "$2" -o /dev/null; }      # a leaf
step() { curl -sSf -X POST "$S/ops" -H "$J" -d "$1" -o /dev/null; }          # one step
backward() { curl -sSf -X POST "$S/backward" -H "$J" -d "$1" -o /dev/null; }
zero() { curl -sSf -X POST "$S/zero_grad" -H "$J" -d "{\"tensors\": [\"$1\"]}" -o /dev/null; }
grad() { echo "$1.grad $(curl -sSf "$S/tensors/$1/grad")"; }                 # print .grad

put a '{"data": [1.0, 2.0, 3.0], "requires_grad": true}'
put b '{"data": [3.0, 4.0, 5.0], "requires_grad": true}'
put c '{"data": [6.0, 7.0, 8.0], "requires_grad": true}'
step '{"out": "y", "expr": "3*a + 2*b*b + log(c)"}'
backward '{"tensors": "y", "grad_tensors": [[0.1, 1.0, 0.0001]], "retain_graph": true}'
grad a; grad b; grad c

put a '{"data": 0.1, "requires_grad": true}'
put b '{"data": 1.0, "requires_grad": true}'
put c '{"data": 0.1, "requires_grad": true}'
step '{"out": "y", "expr": "3*a + 2*b*b + log(c)"}'
backward '{"tensors": "y"}'
grad a; grad b; grad c                                      # 3, 4, 10

put a '{"data": [1.0], "requires_grad": true}'
put b '{"data": [0.0], "requires_grad": true}'
put c '{"data": [0.0], "requires_grad": true}'
step '{"out": "y", "expr": "3*a + 2*b*b + log(c)"}'
backward '{"tensors": "y", "grad_tensors": [[0.1]]}'
grad a; grad b; grad c                                      # c.grad is "Infinity"

put a '{"data": 1.0, "requires_grad": true}'
put b '{"data": 1.0, "requires_grad": true}'
put c '{"data": 1.0, "requires_grad": true}'
step '{"out": "y", "expr": "3*a + 2*b*b + log(c)"}'
backward '{"tensors": "y", "retain_graph": true}'
backward '{"tensors": "y"}'
grad a; grad b; grad c                                      # 6, 8, 2
