export { registerTemplateApi, UPLOAD_PATH_PREFIX, type TemplateApiOptions } from "./register-template-api.js";
export type { TemplateBuildService, ResolveTemplate } from "./template-build-service.js";
