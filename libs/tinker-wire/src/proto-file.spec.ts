import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { file_tinker } from './generated/tinker_pb';

/**
 * src/generated/tinker_pb.ts is generated from proto/tinker.proto (`npm run generate -w
 * libs/tinker-wire`) and committed; this fails when one changed without the other. It reads the few
 * forms the file uses (messages, enums, scalar, message, map and oneof fields) and refuses any other.
 */

const SCALARS: Record<string, number> = { double: 1, float: 2, int64: 3, uint64: 4, int32: 5, bool: 8, string: 9, bytes: 12, uint32: 13 };

type Field = { number: number; type: string; repeated: boolean; optional: boolean; oneof?: string };

function readProto(text: string) {
  const enums = new Set<string>();
  for (const m of text.matchAll(/^enum (\w+) \{/gm)) enums.add(m[1]);
  const typeOf = (t: string) => (t in SCALARS ? String(SCALARS[t]) : enums.has(t) ? `enum ${t}` : `message ${t}`);
  const messages: Record<string, Record<string, Field>> = {};
  const enumValues: Record<string, Record<string, number>> = {};
  let current: { kind: 'message' | 'enum'; name: string } | undefined;
  let oneof: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (line === '' || line.startsWith('syntax') || line.startsWith('package')) continue;
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^(message|enum) (\w+) \{$/))) {
      current = { kind: m[1] as 'message' | 'enum', name: m[2] };
      if (current.kind === 'message') messages[m[2]] = {};
      else enumValues[m[2]] = {};
    } else if ((m = line.match(/^oneof (\w+) \{$/))) oneof = m[1];
    else if (line === '}') {
      if (oneof) oneof = undefined;
      else current = undefined;
    } else if (current?.kind === 'enum' && (m = line.match(/^(\w+) = (\d+);$/))) enumValues[current.name][m[1]] = Number(m[2]);
    else if (current?.kind === 'message' && (m = line.match(/^map<(\w+), (\w+)> (\w+) = (\d+);$/))) {
      messages[current.name][m[3]] = { number: Number(m[4]), type: `map ${SCALARS[m[1]]} ${typeOf(m[2])}`, repeated: true, optional: false };
    } else if (current?.kind === 'message' && (m = line.match(/^(optional |repeated )?(\w+) (\w+) = (\d+);$/))) {
      messages[current.name][m[3]] = { number: Number(m[4]), type: typeOf(m[2]), repeated: m[1] === 'repeated ', optional: m[1] === 'optional ', ...(oneof ? { oneof } : {}) };
    } else throw new Error(`tinker.proto: a line this test does not read: ${raw}`);
  }
  return { messages, enumValues };
}

function readGenerated() {
  const typeOf = (f: { scalar?: number; message?: { name: string }; enum?: { name: string } }) =>
    f.message ? `message ${f.message.name}` : f.enum ? `enum ${f.enum.name}` : String(f.scalar);
  const messages: Record<string, Record<string, Field>> = {};
  for (const message of file_tinker.messages) {
    messages[message.name] = {};
    for (const f of message.fields) {
      let type: string;
      if (f.fieldKind === 'map')
        type = `map ${f.mapKey} ${f.mapKind === 'message' ? `message ${f.message.name}` : f.mapKind === 'enum' ? `enum ${f.enum.name}` : String(f.scalar)}`;
      else if (f.fieldKind === 'list') type = f.listKind === 'message' ? `message ${f.message.name}` : f.listKind === 'enum' ? `enum ${f.enum.name}` : String(f.scalar);
      else type = typeOf(f as { scalar?: number; message?: { name: string }; enum?: { name: string } });
      messages[message.name][f.name] = {
        number: f.number,
        type,
        repeated: f.fieldKind === 'list' || f.fieldKind === 'map',
        optional: f.proto.proto3Optional === true,
        ...(f.oneof ? { oneof: f.oneof.name } : {}),
      };
    }
  }
  const enumValues = Object.fromEntries(file_tinker.enums.map((e) => [e.name, Object.fromEntries(e.values.map((v) => [v.name, v.number]))]));
  return { messages, enumValues };
}

test('the generated code matches proto/tinker.proto (regenerate with `npm run generate -w libs/tinker-wire`)', () => {
  const text = readFileSync(join(process.cwd(), 'libs', 'tinker-wire', 'proto', 'tinker.proto'), 'utf8');
  expect(readGenerated()).toEqual(readProto(text));
});
