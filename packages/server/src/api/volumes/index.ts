// Volumes over HTTP: the control API (API key) and the content API (volume token).
import type { FastifyInstance } from "fastify";
import type { VolumeService } from "../../volumes/volume-service.js";
import { registerVolumeContentRoutes } from "./content-routes.js";
import { registerVolumeRoutes } from "./volume-routes.js";

export function registerVolumeApi(app: FastifyInstance, volumes: VolumeService): void {
  registerVolumeRoutes(app, volumes);
  registerVolumeContentRoutes(app, volumes);
}
