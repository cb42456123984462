// What can raise an alert, and the alert as webhooks and the bus receive it.

export const ALERT_KINDS = ["oom_kill", "start_command_crash", "disk_quota", "heartbeat_lost", "dead_letters", "pool_exhausted"] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Alert {
  /** Unique per alert; the same in every delivery attempt, so receivers can drop duplicates. */
  id: string;
  kind: AlertKind;
  /** ISO 8601. */
  at: string;
  /** The team whose sandbox, queue or agent it is about (absent when no team owns it). */
  teamId?: string;
  sandboxId?: string;
  templateId?: string;
  /** What happened, in words. */
  message: string;
  details: Record<string, string | number>;
}

/** What an alert is about: a sandbox (its team and template looked up), or a team's queue or agent. */
export interface AlertSubject {
  sandboxId?: string | undefined;
  teamId?: string | undefined;
  templateId?: string | undefined;
}

export type RaiseAlert = (kind: AlertKind, message: string, details: Alert["details"], about: AlertSubject) => void;
