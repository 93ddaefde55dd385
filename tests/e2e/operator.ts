/** The operator as a child process, for e2e tests: it lives in tools/operator/process.ts. */
export * from "../../tools/operator/process.ts";
