/** The types of `folder-cycles.cjs` (a plain Node script, so that `npm run lint` runs it without a build). */
export interface CruisedModule {
  source: string;
  dependencies: { resolved: string; dependencyTypes: string[] }[];
}

export interface FolderCycle {
  folders: string[];
  links: { from: string; to: string; imports: string[] }[];
}

export function folderCycles(modules: CruisedModule[]): FolderCycle[];
