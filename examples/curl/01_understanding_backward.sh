#!/usr/bin/env bash
# 01 — Understanding backward() in PyTorch: z = (2x)^3, grad_tensors as scaling factors (tutorials/01_understanding_backward.py)
# Run: bash examples/curl/01_understanding_backward.sh (the server: $B, else B below). Needs only curl.
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
step '{"out": "x", "op": "randn", "args": [1, 1], "kwargs": {"requires_grad": true}}'
step '{"out": "z", "expr": "(2 * x) ** 3"}'
backward '{"tensors": "z", "retain_graph": true}'
grad x                                                      # 24 x^2
for scale in 1.0 0.1 0.5; do
  zero x
  backward "{\"tensors\": \"z\", \"grad_tensors\": [[[$scale]]], \"retain_graph\": true}"
  grad x
done

step '{"out": "x", "op": "randn", "args": [2, 2], "kwargs": {"requires_grad": true}}'
step '{"out": "z", "expr": "(2 * x) ** 3"}'
for g in '[[1, 1], [1, 1]]' '[[0, 1], [0, 1]]' '[[1, 1], [0, 0]]'; do   # all, a column, a row
  zero x
  backward "{\"tensors\": \"z\", \"grad_tensors\": [$g], \"retain_graph\": true}"
  grad x
done

step '{"out": "x", "op": "randn", "args": [2, 2], "kwargs": {"requires_grad": true}}'
step '{"out": "out", "expr": "((2 * x) ** 3).mean()"}'
backward '{"tensors": "out"}'
grad x
