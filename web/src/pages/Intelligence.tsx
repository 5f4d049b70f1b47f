import { Alert, Button, Stack, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { Fit, IntelligenceSummary } from '../api/types';
import { ErrorAlert, PageTitle, QueryState } from '../components/states';
import { Backtests } from '../intelligence/Backtests';
import { Models } from '../intelligence/Models';
import { Distributions, RfmGrid } from '../intelligence/Summary';
import { fmtNumber } from '../lib/format';

export default function Intelligence() {
  const session = useSession();
  const qc = useQueryClient();
  const summary = useQuery({
    queryKey: ['intelligence-summary'],
    queryFn: ({ signal }) =>
      api.get<{ data: IntelligenceSummary }>('/intelligence/summary', undefined, signal).then((r) => r.data),
    staleTime: 60_000,
  });
  const fitNow = useMutation({
    mutationFn: () => api.post<{ data: Fit }>('/intelligence/models/fit', {}).then((r) => r.data),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['models'] });
      void qc.invalidateQueries({ queryKey: ['intelligence-summary'] });
    },
  });
  return (
    <Stack>
      <PageTitle
        actions={
          session.can.admin && (
            <Button onClick={() => fitNow.mutate()} loading={fitNow.isPending} data-testid="fit-now">
              Fit now
            </Button>
          )
        }
      >
        Intelligence
      </PageTitle>
      {fitNow.error && <ErrorAlert error={fitNow.error} title="The fit did not run" />}
      {fitNow.data && (
        <Alert color="teal" role="status" data-testid="fit-result">
          Fitted {fitNow.data.name} on {fmtNumber(fitNow.data.customers)} customers;{' '}
          {fmtNumber(fitNow.data.rescored ?? 0)} profiles rescored.
        </Alert>
      )}
      <Title order={2} size="h4">
        Current models
      </Title>
      <Models />
      <Title order={2} size="h4">
        RFM grid
      </Title>
      <QueryState query={summary} loadingLabel="Counting profiles per RFM cell, CLV and churn risk…">
        {(d) => (
          <Stack data-testid="intelligence-summary">
            <RfmGrid summary={d} />
            <Distributions summary={d} />
          </Stack>
        )}
      </QueryState>
      <Title order={2} size="h4">
        Back-tests
      </Title>
      <Backtests />
    </Stack>
  );
}
