// The SDK has no template delete; tests remove what they built over REST.
export async function deleteTemplate(env: { apiUrl: string; apiKey: string }, ref: string): Promise<void> {
  await fetch(`${env.apiUrl}/templates/${encodeURIComponent(ref)}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
}
