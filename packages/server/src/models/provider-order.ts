// Which providers a request tries, in order: those of its API kind serving its model, by priority (lower first),
// and within one priority in a random order weighted by `weight`, so traffic spreads as configured while every
// provider of the priority stays available for failover.
import { servesModel, type Provider, type ProviderKind } from "./provider-config.js";

export function candidateOrder(providers: readonly Provider[], kind: ProviderKind, model: string, random: () => number = Math.random): Provider[] {
  const serving = providers.filter((p) => p.kind === kind && servesModel(p, model));
  const priorities = [...new Set(serving.map((p) => p.priority))].sort((a, b) => a - b);
  const ordered: Provider[] = [];
  for (const priority of priorities) {
    const pool = serving.filter((p) => p.priority === priority);
    while (pool.length > 0) {
      const total = pool.reduce((sum, p) => sum + p.weight, 0);
      let pick = random() * total;
      let index = 0;
      while (index < pool.length - 1 && pick >= pool[index]!.weight) pick -= pool[index++]!.weight;
      ordered.push(...pool.splice(index, 1));
    }
  }
  return ordered;
}
