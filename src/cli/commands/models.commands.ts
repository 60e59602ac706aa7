import type { Command } from 'commander';
import { loadConfig } from '../../config/app-config';
import { HubCache, isModelFile } from '../../hub/hub-cache';
import { formatHubRef, isHubRef, parseHubRef } from '../../hub/hub-ref';
import { hubSettings } from '../../hub/hub-settings';
import { formatBytes, printJson, printLine, table } from './output';

/**
 * `opentinker models pull|list|rm`: the Hugging Face repos in this machine's Hub cache
 * (`<data folder>/hub`, setting hub_cache_dir). Run on a worker, `pull` fills its cache ahead of the
 * jobs that name the repo (for offline workers: pull, then set HF_HUB_OFFLINE=1). They work on local
 * files and need no server.
 */

/** The cache of this machine, with the server's settings (OPENTINKER_HOME, OPENTINKER_HUB_*, HF_*). */
export function localHubCache(): HubCache {
  return new HubCache(hubSettings(loadConfig(process.env).values));
}

/** What `model info|sample|score` open: `hf:` repos through the local cache, folders as they are. */
export async function localModelDir(dir: string): Promise<string> {
  if (!isHubRef(dir)) return dir;
  return (await localHubCache().resolve(parseHubRef(dir, { field: 'model' }), { field: 'model', log: (l) => process.stderr.write(`${l}\n`) })).dir;
}

export function registerModelsCommands(program: Command): void {
  const models = program.command('models').description("Hugging Face repos in this machine's Hub cache (<data folder>/hub); each worker keeps its own");

  models
    .command('pull')
    .description(
      "Download a repo at a revision into the cache (models: safetensors, config and tokenizer files), resuming a partial download; every tenant of this machine's server may then use it",
    )
    .argument('<id>', 'Org/Name[@revision] (hf: optional); hf:datasets/Org/Name for a dataset repo')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const ref = parseHubRef(id, { field: 'model' });
      const cache = localHubCache();
      const snap = await cache.resolve(ref, {
        field: 'model',
        select: ref.type === 'model' ? isModelFile : () => true,
        log: (l) => process.stderr.write(`${l}\n`),
      });
      // The operator's pull: every tenant of a server using this cache may use it (docs/models.md).
      await cache.markShared(ref, snap.commit);
      const bytes = snap.files.reduce((a, f) => a + f.size, 0);
      if (opts.json)
        return printJson({
          repo: ref.repo,
          type: ref.type,
          revision: ref.revision ?? 'main',
          commit: snap.commit,
          dir: snap.dir,
          files: snap.files.map((f) => f.path),
          bytes,
          downloaded_bytes: snap.downloadedBytes,
        });
      printLine(
        `${formatHubRef(ref)} at ${snap.commit}: ${snap.files.length} files, ${formatBytes(bytes)}${snap.downloadedBytes > 0 ? ` (${formatBytes(snap.downloadedBytes)} downloaded)` : ' (all cached)'}`,
      );
      printLine(`Folder: ${snap.dir}`);
      if (ref.type === 'model') printLine(`Use it: model.path=hf:${ref.repo}${ref.revision ? `@${ref.revision}` : ''}   (jobs on this worker find it cached)`);
    });

  models
    .command('list')
    .description('Cached repos: revisions, commits, size on disk')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const cache = localHubCache();
      const repos = await cache.list();
      if (opts.json) return printJson(repos);
      if (repos.length === 0) return printLine(`No repos cached in ${cache.settings.cacheDir}.`);
      printLine(
        table(repos, [
          ['REPO', (r) => formatHubRef({ ...r, revision: null })],
          [
            'REFS',
            (r) =>
              Object.entries(r.refs)
                .map(([name, sha]) => `${name}=${sha.slice(0, 12)}`)
                .join(' '),
          ],
          ['SNAPSHOTS', (r) => r.snapshots.length],
          ['SIZE', (r) => formatBytes(r.bytes)],
          ['PARTIAL', (r) => (r.partialBytes > 0 ? formatBytes(r.partialBytes) : null)],
        ]),
      );
    });

  models
    .command('rm')
    .description('Delete a repo from the cache (all its revisions)')
    .argument('<id>', 'Org/Name (hf: optional); hf:datasets/Org/Name for a dataset repo')
    .action(async (id: string) => {
      const ref = parseHubRef(id, { field: 'model' });
      const cache = localHubCache();
      if (await cache.remove(ref)) printLine(`Removed ${formatHubRef({ ...ref, revision: null })} from ${cache.settings.cacheDir}.`);
      else {
        process.stderr.write(`opentinker: ${formatHubRef({ ...ref, revision: null })} is not in the cache at ${cache.settings.cacheDir}\n`);
        process.exitCode = 1;
      }
    });
}
