/** The Intelligence page's back-tests: the paged list and an opened back-test's holdout evaluation. */
import { BarChart } from '@mantine/charts';
import { Badge, Button, Card, Group, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { BacktestItem, Fit } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, ErrorAlert, QueryState } from '../components/states';
import { fmtNumber, fmtTime } from '../lib/format';

function Evaluation({ fit }: { fit: Fit }) {
  const ev = fit.evaluation;
  if (!ev) return <Text size="sm">This fit has no holdout evaluation.</Text>;
  const rows = ev.by_calibration_purchases as {
    repeat_purchases: string;
    customers: number;
    actual_mean: number | null;
    predicted_mean: number | null;
  }[];
  return (
    <Stack data-testid="backtest-result">
      <Text size="sm">
        {`Fitted on orders up to ${fmtTime(fit.as_of)}; holdout ${fmtTime(ev.holdout.from)} – ${fmtTime(ev.holdout.to)} (${ev.holdout.weeks.toFixed(1)} weeks), ${fmtNumber(ev.customers)} customers. Purchases: actual ${fmtNumber(ev.actual_purchases)}, predicted ${fmtNumber(ev.predicted_purchases, 1)}. Per customer: mean absolute error ${fmtNumber(ev.per_customer.mean_absolute_error, 3)}, correlation ${fmtNumber(ev.per_customer.correlation, 3)}.`}
      </Text>
      <BarChart
        h={240}
        data={rows.map((r) => ({
          group: r.repeat_purchases,
          actual: r.actual_mean ?? 0,
          predicted: r.predicted_mean ?? 0,
        }))}
        dataKey="group"
        series={[
          { name: 'actual', label: 'Actual (mean)', color: 'indigo.6' },
          { name: 'predicted', label: 'Predicted (mean)', color: 'orange.6' },
        ]}
        withLegend
        xAxisLabel="repeat purchases before the holdout"
        yAxisLabel="purchases in the holdout"
      />
      <Table.ScrollContainer minWidth={500}>
        <Table fz="sm" data-testid="holdout-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Repeat purchases</Table.Th>
              <Table.Th ta="right">Customers</Table.Th>
              <Table.Th ta="right">Actual, mean</Table.Th>
              <Table.Th ta="right">Predicted, mean</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r) => (
              <Table.Tr key={r.repeat_purchases}>
                <Table.Td>{r.repeat_purchases}</Table.Td>
                <Table.Td ta="right">{fmtNumber(r.customers)}</Table.Td>
                <Table.Td ta="right">{fmtNumber(r.actual_mean, 3)}</Table.Td>
                <Table.Td ta="right">{fmtNumber(r.predicted_mean, 3)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  );
}

/** The workspace's back-tests from GET /intelligence/backtests (newest first); one opens below. */
function BacktestList({ opened, onOpen }: { opened: string | null; onOpen: (fitId: string) => void }) {
  const paged = usePaged<BacktestItem>('/intelligence/backtests', {}, { limit: 10 });
  return (
    <QueryState
      query={paged.query}
      isEmpty={(d) => d.data.length === 0 && paged.page === 1}
      empty={<Empty title="No back-test yet">The API keeps a workspace's newest 10 back-tests.</Empty>}
    >
      {() => (
        <>
          <Table.ScrollContainer minWidth={700}>
            <Table fz="sm" data-testid="backtests-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Fitted as of</Table.Th>
                  <Table.Th>Holdout ends</Table.Th>
                  <Table.Th>Model</Table.Th>
                  <Table.Th ta="right">Customers</Table.Th>
                  <Table.Th ta="right">Actual</Table.Th>
                  <Table.Th ta="right">Predicted</Table.Th>
                  <Table.Th ta="right">MAE</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {paged.rows.map((b) => (
                  <Table.Tr key={b.fit_id} bg={b.fit_id === opened ? 'indigo.0' : undefined}>
                    <Table.Td>{fmtTime(b.as_of)}</Table.Td>
                    <Table.Td>{fmtTime(b.holdout_end)}</Table.Td>
                    <Table.Td>{b.name}</Table.Td>
                    <Table.Td ta="right">{fmtNumber(b.holdout?.customers)}</Table.Td>
                    <Table.Td ta="right">{fmtNumber(b.holdout?.actual_purchases)}</Table.Td>
                    <Table.Td ta="right">{fmtNumber(b.holdout?.predicted_purchases, 1)}</Table.Td>
                    <Table.Td ta="right">{fmtNumber(b.holdout?.mean_absolute_error, 3)}</Table.Td>
                    <Table.Td>
                      {b.holdout ? (
                        <Button
                          size="compact-xs"
                          variant="default"
                          onClick={() => onOpen(b.fit_id)}
                          aria-label={`Open the back-test as of ${fmtTime(b.as_of)}`}
                        >
                          Open
                        </Button>
                      ) : (
                        <Badge variant="light" color="gray">
                          {b.completed_at ? 'no evaluation' : 'running or failed'}
                        </Badge>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Pager paged={paged} label="back-tests" />
        </>
      )}
    </QueryState>
  );
}

export function Backtests() {
  const session = useSession();
  const qc = useQueryClient();
  const [asOf, setAsOf] = useState('');
  const [holdoutEnd, setHoldoutEnd] = useState('');
  const [model, setModel] = useState<string | null>('mbg_nbd');
  const [opened, setOpened] = useState<string | null>(null);
  const run = useMutation({
    mutationFn: () =>
      api
        .post<{ data: Fit }>('/intelligence/models/fit', {
          model,
          as_of: new Date(asOf).toISOString(),
          ...(holdoutEnd ? { holdout_end: new Date(holdoutEnd).toISOString() } : {}),
        })
        .then((r) => r.data),
    onSuccess: (f) => {
      setOpened(f.fit_id);
      void qc.invalidateQueries({ queryKey: ['/intelligence/backtests'] });
    },
  });
  const fit = useQuery({
    queryKey: ['fit', opened],
    queryFn: ({ signal }) =>
      api.get<{ data: Fit }>(`/intelligence/models/${opened}`, undefined, signal).then((r) => r.data),
    enabled: Boolean(opened),
  });
  return (
    <Stack>
      {session.can.admin && (
        <Group align="flex-end" wrap="wrap" gap="xs">
          <TextInput
            label="Fit as of"
            type="date"
            value={asOf}
            onChange={(e) => setAsOf(e.currentTarget.value)}
            w={180}
          />
          <TextInput
            label="Holdout ends"
            description="default: now"
            type="date"
            value={holdoutEnd}
            onChange={(e) => setHoldoutEnd(e.currentTarget.value)}
            w={180}
          />
          <Select
            label="Model"
            data={['mbg_nbd', 'bg_nbd']}
            value={model}
            onChange={setModel}
            allowDeselect={false}
            w={140}
          />
          <Button
            onClick={() => run.mutate()}
            disabled={!asOf}
            loading={run.isPending}
            data-testid="backtest-run"
          >
            Run back-test
          </Button>
        </Group>
      )}
      {run.error && <ErrorAlert error={run.error} title="The back-test did not run" />}
      <BacktestList opened={opened} onOpen={setOpened} />
      {opened && (
        <QueryState query={fit}>
          {(f) => (
            <Card withBorder>
              <Text size="xs" c="gray.7">
                fit {f.fit_id} · {f.name} · {f.backtest ? 'back-test' : 'live fit'}
              </Text>
              <Evaluation fit={f} />
            </Card>
          )}
        </QueryState>
      )}
    </Stack>
  );
}
