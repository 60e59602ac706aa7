/** The types of `folder-cycles.cjs` (a plain Node script, so that `npm run lint` runs it without a build). */
export interface CruisedModule {
  source: string;
  dependencies: { resolved: string; dependencyTypes: string[] }[];
}

export interface FolderCycle {
  folders: string[];
  links: { from: string; to: string; imports: string[] }[];
}

/** `folder`: each directory is a folder; `top`: each top-level folder of src/ with its sub-folders (files directly in src/: `src`). */
export type FolderLevel = 'folder' | 'top';

export const LEVELS: readonly FolderLevel[];

export function folderCycles(modules: CruisedModule[], level?: FolderLevel): FolderCycle[];
