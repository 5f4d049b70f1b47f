import { Type } from 'typebox';
import { planCommand, UsageError } from './commands';
import { ConfigError } from './config';
import { AppError } from './platform/errors';
import type { AuditExemption } from './platform/http/audit';
import { ok } from './platform/http/envelope';
import type { App, AppDeps } from './platform/http/types';

/**
 * The CLI's commands are not in the audit trail: whoever can call this route holds the embedded
 * database's directory (its lock's token), i.e. the data itself, and on PostgreSQL the same commands
 * run without the API, so an entry here would record only some of them.
 */
const AUDIT_EXEMPT_CLI: AuditExemption['exempt'] =
  'the local CLI on the machine that holds the database: the same commands run without the API on PostgreSQL, so the trail could not hold them all';

/** Enough for any command line a person types; the demo is the longest-running, not the largest. */
const ARGV_LIMITS = { items: 50, chars: 2000 };

/**
 * The `cdp` CLI beside a running service on the embedded database: the CLI cannot open DATA_DIR
 * (this process holds it), so it sends its arguments here and this process runs the same command
 * on its own connection (src/commands.ts). Callable only with the token in this process's lock
 * file (auth `local`), so it does not exist on PostgreSQL, where the CLI opens the database itself.
 * Left out of the API documentation: its contract is the CLI's.
 */
export function registerCommandRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/system/commands',
    {
      config: { auth: 'local', rateTier: 'none', audit: { exempt: AUDIT_EXEMPT_CLI } },
      schema: {
        hide: true,
        body: Type.Object(
          {
            argv: Type.Array(Type.String({ maxLength: ARGV_LIMITS.chars }), {
              minItems: 1,
              maxItems: ARGV_LIMITS.items,
            }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const lines: string[] = [];
      try {
        const plan = await planCommand(req.body.argv);
        if (plan.kind !== 'db' || plan.command.exclusive) {
          throw new UsageError(`\`cdp ${req.body.argv[0]}\` does not run inside a running service`);
        }
        const output = await plan.command.run({
          db: deps.db,
          config: deps.config,
          applied: [],
          settings: deps.settings,
          out: (line) => lines.push(line),
        });
        return ok({ output: output ?? null, lines });
      } catch (err) {
        if (err instanceof UsageError || err instanceof ConfigError) {
          throw new AppError('VALIDATION_ERROR', err.message);
        }
        throw err;
      }
    },
  );
}
