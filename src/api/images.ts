/** The images of the module workloads, as the reducers render them. */

/** Images of the module workloads; pinned, overridable by operator flags. */
export interface ModuleImages {
  serverlessController: string;
  kedaOperator: string;
  kedaMetricsServer: string;
  kedaAdmissionWebhooks: string;
}
