// envd's tag of a template's start command (the orchestrator's START_COMMAND_TAG; the same string, which the
// orchestrator's public surface does not export).
export const START_COMMAND_TAG = "burrow-start-cmd";
