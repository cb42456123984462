// Connection details the global setup provides to every test file.
export interface BurrowTestEnv {
  apiUrl: string;
  sandboxUrl: string;
  apiKey: string;
  /** State directory of the server under test (for leak checks). */
  stateDir: string;
  instance: string;
  subnet: string;
  /** The server's image import directory (imageImportDir): the only place fromImage may name host paths. */
  imageDir: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    burrow: BurrowTestEnv;
  }
}
