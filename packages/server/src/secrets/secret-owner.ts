// Who a secret belongs to. Today the API key that created it, like a sandbox's `api_key_id`; when teams arrive the
// scope changes here (and in the store's owner column), nowhere else.
export interface SecretOwner {
  /** Id of the API key (api_keys.id) the request authenticated with. */
  readonly apiKeyId: number;
}

/** The value of `secrets.owner_key_id` that a lookup for `owner` matches: the single place secrets are scoped. */
export function ownerScope(owner: SecretOwner): number {
  return owner.apiKeyId;
}
