import { environmentSpec } from './rl-spec';

describe('environmentSpec with protocol opentinker', () => {
  const issues = (value: unknown) => {
    const r = environmentSpec.safeParse(value);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('accepts an OpenTinker game server without an id, with shards and per-split tasks', () => {
    expect(issues({ url: 'http://game:8081', protocol: 'opentinker', shards: 4, tasks: { test: [{ level: 1 }] } })).toEqual([]);
  });

  it('still requires an id for our own protocol and in-process plugins', () => {
    expect(issues({ url: 'http://env:8088' })).toEqual([expect.stringMatching(/^id: environment.id is required/)]);
    expect(issues({ config: {} })).toEqual([expect.stringMatching(/^id: /)]);
  });

  it('refuses shards and tasks outside protocol opentinker, and protocol opentinker without a url', () => {
    expect(issues({ id: 'math', url: 'http://env:8088', shards: 2 })).toEqual([expect.stringMatching(/^shards: .*protocol opentinker only/)]);
    expect(issues({ id: 'math', tasks: { train: [{}] } })).toEqual([expect.stringMatching(/^tasks: /)]);
    expect(issues({ protocol: 'opentinker' })).toEqual([expect.stringMatching(/^url: protocol opentinker needs environment.url/)]);
    expect(issues({ url: 'http://game:8081', protocol: 'opentinker', shards: 0 })).toEqual([expect.stringMatching(/^shards: /)]);
  });
});
