// Types for scripts/engine-files.mjs (plain JavaScript, so that scripts/summarize.mjs can use it too).
export const ENGINE_SIGNS: Array<[RegExp, string]>;
export const ENGINE_PACKAGES: Map<string, string>;
export const TEST_ROOTS: string[];
export interface Classification {
  /** Whether the file's run can depend on the engine: it runs on both engines. */
  bound: boolean;
  /** The import path to the first module that touches an engine, and why; null when none does. */
  why: string | null;
  /** For a file that runs once: every module it can load (absolute paths), the file included. */
  reached: string[] | null;
}
export function classifyTestFiles(root?: string, files?: string[]): Map<string, Classification>;
export function listTestFiles(root?: string): string[];
export function engineSplit(root?: string): { bound: string[]; free: string[] };
