// The dashboard's server side: the handler the composition root mounts to serve the built UI.
export { createDashboardHandler, DASHBOARD_UI_DIR, type DashboardHandlerOptions } from "./static-handler.js";
