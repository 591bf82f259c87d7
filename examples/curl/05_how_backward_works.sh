#!/usr/bin/env bash
# 05 — How backward() works: a vector-Jacobian product, the doubling loop (tutorials/05_how_backward_works.py)
# Run: bash examples/curl/05_how_backward_works.sh (the server: $B, else B below). Needs only curl.
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

step '{"op": "manual_seed", "args": [0]}'                      # torch.manual_seed(0)
step '{"out": "x", "op": "randn", "args": [3], "kwargs": {"requires_grad": true}}'
step '{"out": "y", "expr": "x.sum()"}'
backward '{"tensors": "y"}'
grad x                                                      # ones

step '{"out": "x", "op": "randn", "args": [3], "kwargs": {"requires_grad": true}}'
step '{"out": "y", "expr": "x * 2"}'
until [ "$(curl -sSf -X POST "$S/ops" -H "$J" -d '{"out": "n", "expr": "y.norm() >= 1000"}' \
           -o /dev/null && curl -sSf "$S/tensors/n?encoding=json" | grep -c '"data":true')" = 1 ]; do
  step '{"out": "y", "expr": "y * 2"}'                      # while y.norm() < 1000
done
step '{"out": "n", "expr": "y.norm()"}'
echo "n $(curl -sSf "$S/tensors/n?encoding=json")"      # its "data" is over 1000
backward '{"tensors": "y", "grad_tensors": [[0.1, 1.0, 0.0001]]}'
grad x                                                      # v * 2^12

put x '{"data": [1.0, 2.0], "requires_grad": true}'
step '{"out": "z", "expr": "(x ** 2) * 3"}'
backward '{"tensors": "z", "grad_tensors": [[0.2, 0.8]]}'
grad x
