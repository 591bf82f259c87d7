#!/usr/bin/env bash
# 04 — Getting started: the graph b = w1*a, c = w2*a, d = w3*b + w4*c, L = 10 - d (tutorials/04_getting_started_autograd.py)
# Run: bash examples/curl/04_getting_started_autograd.sh (the server: $B, else B below). Needs only curl.
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

put a '{"data": 2.0, "requires_grad": true}'
put w1 '{"data": 0.5, "requires_grad": true}'
put w2 '{"data": -1.5, "requires_grad": true}'
put w3 '{"data": 3.0, "requires_grad": true}'
put w4 '{"data": 0.25, "requires_grad": true}'
curl -sSf -X POST "$S/batch" -H "$J" -o /dev/null -d '{"steps": [
  {"out": "b", "expr": "w1 * a"}, {"out": "c", "expr": "w2 * a"},
  {"out": "d", "expr": "w3 * b + w4 * c"}, {"out": "L", "expr": "10 - d"}]}'
curl -sSf -X PATCH "$S/tensors/d" -H "$J" -d '{"retain_grad": true}' -o /dev/null
backward '{"tensors": "L"}'
grad w1; grad w2; grad w3; grad w4; grad a; grad d

for w in w1 w2 w3 w4; do                                    # w -= 0.1 * w.grad, under no_grad
  step "{\"out\": \"$w\", \"expr\": \"$w - 0.1 * $w.grad\", \"assign\": true}"
done
echo "w1 $(curl -sSf "$S/tensors/w1?encoding=json")"       # its "data" is 0.5 + 0.1 * 6

curl -sSf -X POST "$S/batch" -H "$J" -o /dev/null -d '{"steps": [
  {"out": "frozen", "expr": "detach(w1)"}, {"out": "b", "expr": "frozen * a"},
  {"out": "L", "expr": "10 - (w3 * b + w4 * (w2 * a))"}]}'
zero a
backward '{"tensors": "L"}'
grad a                                                      # no gradient through frozen w1
