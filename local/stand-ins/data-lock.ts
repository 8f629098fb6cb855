/**
 * One process per data folder: the emulators keep their data under it (dynalite's LevelDB
 * allows one opener, and two S3 emulators on one folder would overwrite each other), so the
 * folder is taken with a pid file created exclusively. A file whose process is gone (killed,
 * crashed) is stale and taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The data folder is in use by a live process: another `npm run dev`, or another stack of this one. */
export class DataDirInUse extends Error {
  override readonly name = 'DataDirInUse';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`The data folder ${dataDir} is in use by process ${pid}.`);
  }
}

/**
 * What to do about it, in one line, for `npm run dev` and `npm start` alike: the folder as the
 * user named it (relative when it is inside the working directory) and the holder's pid.
 */
export function dataDirInUseAdvice(error: DataDirInUse): string {
  const inside = relative(process.cwd(), error.dataDir);
  const folder = inside && !inside.startsWith('..') ? inside : error.dataDir;
  return `The data folder ${folder} is in use by another Stepwise process (pid ${error.pid}), e.g. another npm run dev: stop it, or set STEPWISE_DATA_DIR to another folder.`;
}

export interface DataDirLock {
  /** Gives the folder up; a second call does nothing. */
  release(): void;
}

/** The pid file in a locked data folder. */
export const lockFileName = 'stepwise.pid';

/** Takes `dataDir` for this process, or throws `DataDirInUse` naming the live process that holds it. */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, lockFileName);
  // Twice at most: once more after removing a stale file.
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return held(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = holderOf(file);
    if (holder !== undefined && isAlive(holder)) throw new DataDirInUse(dataDir, holder);
    rmSync(file, { force: true });
  }
  const holder = holderOf(file);
  throw new DataDirInUse(dataDir, holder ?? 0);
}

function held(file: string): DataDirLock {
  // Also given up when the process exits without stopping the emulators (an uncaught error).
  const release = () => {
    process.off('exit', release);
    rmSync(file, { force: true });
  };
  process.once('exit', release);
  return { release };
}

/** The pid in the file; undefined when the file is gone or holds no pid. */
function holderOf(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
