import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { AccountDetailSchema, AccountIdParams, AccountSchema, ListAccountsQuery } from './accounts.schemas';
import { getAccount, listAccounts } from './accounts.service';

const security = [{ apiKey: [] }];
const tags = ['accounts'];

export function registerAccountRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/accounts',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'List the accounts (groups named by `group` calls) in the order they were first stored; filter by `profile_id`.',
        querystring: ListAccountsQuery,
        response: { 200: PageEnvelope(AccountSchema) },
      },
    },
    async (req) => {
      const { limit, cursor, ...filter } = req.query;
      const page = pageOf(req, deps.cursors, 'accounts');
      return paged(await listAccounts(deps.db, deps.cursors, workspaceOf(req), page, filter));
    },
  );

  app.get(
    '/tenant/accounts/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'Read one account by its group id: traits, first and last seen, and its most recent members.',
        params: AccountIdParams,
        response: { 200: Envelope(AccountDetailSchema) },
      },
    },
    async (req) => ok(await getAccount(deps.db, workspaceOf(req), req.params.id)),
  );
}
