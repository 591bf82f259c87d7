#!/usr/bin/env bash
# 02 — PyTorch autograd, the heart of its magic: weights, accumulation, a second backward (tutorials/02_autograd_heart.py)
# Run: bash examples/curl/02_autograd_heart.sh (the server: $B, else B below). Needs only curl.
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

put x '{"data": 1.0, "requires_grad": true}'
step '{"out": "z", "expr": "x ** 3"}'
backward '{"tensors": "z"}'
grad x                                                      # 3

put x '{"data": [1.0, 2.0], "requires_grad": true}'
step '{"out": "y", "expr": "x ** 2"}'
backward '{"tensors": "y", "grad_tensors": ["x"]}'         # x as the weights: [2, 8]
grad x

put x '{"data": [1.0, 2.0], "requires_grad": true}'
step '{"out": "y", "expr": "x ** 2"}'
step '{"out": "z", "expr": "y ** 3"}'
backward '{"tensors": "z", "grad_tensors": [[1.0, 1.0]], "retain_graph": true}'
grad y                                                      # null: y is not a leaf
grad x
backward '{"tensors": "z", "grad_tensors": [[1.0, 1.0]], "retain_graph": true}'
grad x                                                      # accumulated

put x '{"data": [2.0, 2.0], "requires_grad": true}'
put z '{"data": [4.0, 4.0], "requires_grad": true}'
step '{"out": "y", "expr": "x ** 2 + z ** 3"}'
backward '{"tensors": "y", "grad_tensors": [[1.0, 1.0]]}'
grad x
grad z
echo "second_backward $(curl -s -o /dev/null -w '%{http_code}' -X POST "$S/backward" -H "$J" \
  -d '{"tensors": "y", "grad_tensors": [[1.0, 1.0]]}')"   # 409 graph_freed

put x '{"data": [[1.0, 2.0, 3.0, 4.0]], "requires_grad": true}'
step '{"out": "z", "expr": "2 * x"}'
for row in '[[1, 0, 0, 0]]' '[[0, 1, 0, 0]]' '[[1, 1, 1, 1]]'; do
  backward "{\"tensors\": \"z\", \"grad_tensors\": [$row], \"retain_graph\": true}"
  grad x
  zero x
done
