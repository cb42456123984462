// Burrow's checkpoint answers under /burrow/v1, in the wire names the rest of the API uses (checkpointID,
// sandboxID…): what the server sends and the SDK and the CLI read.

/** One checkpoint. Files only: `contents` says so. */
export interface CheckpointWire {
  checkpointID: string;
  sandboxID: string;
  parentID: string | null;
  label?: string;
  createdAt: string;
  sizeBytes: number;
  contents: "files";
  /** In a tree: whether the sandbox's current files descend from this checkpoint. */
  current?: boolean;
}

/** A sandbox's checkpoints, parents before their children. */
export interface CheckpointTreeWire {
  sandboxID: string;
  currentID: string | null;
  contents: "files";
  checkpoints: CheckpointWire[];
}
