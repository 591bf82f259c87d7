// The tutorial example through a TypeScript client generated from openapi/openapi.json
// (openapi-typescript types + openapi-fetch). Compiled with `tsc --strict`, so the
// generated types are checked as a TypeScript user would meet them.
//
//   node e2e.js <base url> <session name> [api key]   -> prints one JSON object of what it saw
//
// x = [1, 2] (requires grad); y = x ** 2; z = y ** 3 in one atomic batch;
// z.backward([1, 1], retain_graph=True) twice -> x.grad [6, 192] then [12, 384];
// y.grad is null with PyTorch's warning; zero_grad -> [0, 0]; a backward without
// retain_graph, then another: the second is a typed problem (409 graph_freed); a program
// q = x * x stored and its Jacobian asked for (diag(2x)).

import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

// node's globals, declared here so the test needs no @types/node
declare const process: { argv: string[]; exit(code: number): never };
declare const console: { log(...args: unknown[]): void; error(...args: unknown[]): void };

type Problem = components["schemas"]["ProblemOut"];
type Value = components["schemas"]["ValueOut"];

const [baseUrl, session, apiKey] = process.argv.slice(2);
const api = createClient<paths>({
  baseUrl,
  headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
});
const at = { params: { path: { session } } };

function fail(what: string, error: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(error)}`);
}

function numbers(value: Value | null | undefined): number[] {
  if (!value || !Array.isArray(value.data)) fail("expected json data", value);
  return value.data as number[];
}

async function main(): Promise<void> {
  const seen: Record<string, unknown> = {};

  const created = await api.POST("/v1/sessions", { body: { name: session } });
  if (created.error) fail("createSession", created.error);
  seen.session = created.data.name;

  const put = await api.PUT("/v1/sessions/{session}/tensors/{tensor}", {
    params: { path: { session, tensor: "x" } },
    body: { data: [1.0, 2.0], requires_grad: true },
  });
  if (put.error) fail("putTensor", put.error);
  seen.x = { requires_grad: put.data.requires_grad, is_leaf: put.data.is_leaf };

  const batch = await api.POST("/v1/sessions/{session}/batch", {
    ...at,
    body: {
      steps: [
        { out: "y", op: "pow", args: ["x", 2] },
        { out: "z", expr: "y ** 3" },
      ],
    },
  });
  if (batch.error) fail("runBatch", batch.error);
  seen.grad_fns = batch.data.tensors.map((t) => [t.name, t.grad_fn]);

  for (const round of [1, 2]) {
    const back = await api.POST("/v1/sessions/{session}/backward", {
      ...at,
      body: { tensors: "z", grad_tensors: [[1.0, 1.0]], retain_graph: true },
    });
    if (back.error) fail("backward", back.error);
    seen[`backward_${round}`] = numbers(back.data.grads["x"]);
    const grad = await api.GET("/v1/sessions/{session}/tensors/{tensor}/grad", {
      params: { path: { session, tensor: "x" } },
    });
    if (grad.error) fail("getGrad", grad.error);
    // JSON or raw bytes (Accept: application/octet-stream): this call asked for JSON
    seen[`x_grad_${round}`] = numbers((grad.data as components["schemas"]["GradOut"]).grad);
  }

  const yGrad = await api.GET("/v1/sessions/{session}/tensors/{tensor}/grad", {
    params: { path: { session, tensor: "y" } },
  });
  if (yGrad.error) fail("getGrad y", yGrad.error);
  const yGradOut = yGrad.data as components["schemas"]["GradOut"];
  seen.y_grad = yGradOut.grad;
  seen.y_warning = yGradOut.warning;

  const zeroed = await api.POST("/v1/sessions/{session}/zero_grad", { ...at, body: { tensors: ["x"] } });
  if (zeroed.error) fail("zeroGrad", zeroed.error);
  const tensor = await api.GET("/v1/sessions/{session}/tensors/{tensor}", {
    params: { path: { session, tensor: "x" }, query: { encoding: "json" } },
  });
  if (tensor.error) fail("getTensor", tensor.error);
  seen.x_grad_zeroed = numbers((tensor.data as components["schemas"]["TensorOut"]).grad);

  const first = await api.POST("/v1/sessions/{session}/backward", {
    ...at,
    body: { tensors: ["z"], grad_tensors: [{ data: [1.0, 1.0] }] },
  });
  if (first.error) fail("backward without retain_graph", first.error);
  const second = await api.POST("/v1/sessions/{session}/backward", {
    ...at,
    body: { tensors: ["z"], grad_tensors: [{ data: [1.0, 1.0] }] },
  });
  if (!second.error) fail("second backward should fail", second.data);
  const problem: Problem = second.error;
  seen.problem = {
    status: second.response.status,
    contentType: second.response.headers.get("content-type"),
    code: problem.code,
    title: problem.title,
    detail: problem.detail,
    hint: problem.hint,
  };

  // a program stored once, differentiated as a function: d(x * x)/dx = diag(2x)
  const stored = await api.PUT("/v1/sessions/{session}/programs/{program}", {
    params: { path: { session, program: "square" } },
    body: { steps: [{ out: "q", expr: "x * x" }] },
  });
  if (stored.error) fail("putProgram", stored.error);
  seen.program = { pure: stored.data.pure, reads: stored.data.reads, binds: stored.data.binds };
  const jac = await api.POST("/v1/sessions/{session}/programs/{program}/jacobian", {
    params: { path: { session, program: "square" }, query: { encoding: "json" } },
    body: { of: ["q"], wrt: ["x"] },
  });
  if (jac.error) fail("programJacobian", jac.error);
  seen.jacobian = jac.data.jacobian["q"]["x"].data;

  const dropped = await api.DELETE("/v1/sessions/{session}", at);
  seen.deleted = dropped.response.status;
  console.log(JSON.stringify(seen));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
