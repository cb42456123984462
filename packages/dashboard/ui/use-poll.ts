// Re-runs a load every `intervalMs` while the component is mounted; a slow answer is never overtaken by the next
// (each round starts after the previous one ended) and unmounting aborts the one in flight. `refresh` during a round
// runs one more round right after it, so a burst of live events costs at most one extra request.
import { useEffect, useRef, useState } from "preact/hooks";

export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, intervalMs: number, deps: unknown[]): { data: T | undefined; error: string | null; refresh: () => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const kick = useRef<() => void>(() => {});
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    let again = false;
    const round = async () => {
      clearTimeout(timer);
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        const value = await load(controller.signal);
        if (controller.signal.aborted) return;
        setData(value);
        setError(null);
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err instanceof Error ? err.message : String(err));
      } finally {
        running = false;
      }
      if (again) {
        again = false;
        void round();
        return;
      }
      timer = setTimeout(() => void round(), intervalMs);
    };
    kick.current = () => void round();
    void round();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, deps);
  return { data, error, refresh: () => kick.current() };
}
