import { hubReposIn, mayUseHubSnapshot, operatorServes } from './hub-access';

describe('who may use a Hub snapshot', () => {
  const alice = { userId: 'alice', admin: false };
  const facts = (over: Partial<Parameters<typeof mayUseHubSnapshot>[1]> = {}) => ({ repo: 'private/secret', operatorShared: false, records: [], ...over });

  it('lets a user use what their own token fetched, public snapshots, the operator’s pulls and listed repos; admins everything', () => {
    expect(mayUseHubSnapshot(alice, facts(), [])).toBe(false);
    expect(mayUseHubSnapshot(alice, facts({ records: [{ userId: 'bob', access: 'token' }] }), [])).toBe(false);
    expect(mayUseHubSnapshot(alice, facts({ records: [{ userId: 'bob', access: 'operator' }] }), [])).toBe(false);
    expect(mayUseHubSnapshot(alice, facts({ records: [{ userId: 'alice', access: 'token' }] }), [])).toBe(true);
    expect(mayUseHubSnapshot(alice, facts({ records: [{ userId: 'bob', access: 'public' }] }), [])).toBe(true);
    expect(mayUseHubSnapshot(alice, facts({ operatorShared: true }), [])).toBe(true);
    expect(mayUseHubSnapshot(alice, facts(), ['private/*'])).toBe(true);
    expect(mayUseHubSnapshot({ userId: 'root', admin: true }, facts(), [])).toBe(true);
  });

  it('reads hub_token_repos as exact ids or Org/*, case-insensitively', () => {
    expect(operatorServes('Meta-Llama/Llama-3.2-1B', ['meta-llama/*'])).toBe(true);
    expect(operatorServes('meta-llama/Llama-3.2-1B', ['meta-llama/llama-3.2-1b'])).toBe(true);
    expect(operatorServes('gpt2', ['gpt2'])).toBe(true);
    expect(operatorServes('meta-llama-evil/x', ['meta-llama/*'])).toBe(false);
    expect(operatorServes('meta-llama/Llama-3.2-1B', ['meta-llama/Llama-3.2-3B'])).toBe(false);
    expect(operatorServes('gpt2', [])).toBe(false);
  });

  it('finds the repos a spec names, each once, ignoring what is not a repo name', () => {
    const spec = { kind: 'train', model: { path: 'hf:Org/A@main' }, other: ['hf:Org/A', 'hf:datasets/openai/gsm8k', 'hf:../x', 'Org/B'], deep: { x: { y: 'hf:gpt2' } } };
    expect(hubReposIn(spec)).toEqual([
      { type: 'model', repo: 'Org/A' },
      { type: 'dataset', repo: 'openai/gsm8k' },
      { type: 'model', repo: 'gpt2' },
    ]);
  });
});
