/** The API groups of the project's resources. */

/** API group of the module resources (Serverless, Scaler). */
export const OPERATOR_GROUP = "operator.platform-project.io";
/** API group of RateLimit. */
export const GATEWAY_GROUP = "gateway.platform-project.io";
