import { AreaChart } from '@mantine/charts';
import { Card, Group, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/client';
import type { Stats } from '../api/types';
import { PageTitle, QueryState } from '../components/states';
import { fmtDuration, fmtMoney, fmtNumber, fmtTime } from '../lib/format';

function Stat({
  label,
  value,
  hint,
  testid,
  to,
}: {
  label: string;
  value: string;
  hint?: string;
  testid: string;
  to?: string;
}) {
  const body = (
    <>
      <Text size="xs" tt="uppercase" fw={700} c="gray.8">
        {label}
      </Text>
      <Text fz={26} fw={700} c="dark.8">
        {value}
      </Text>
      {hint && (
        <Text size="xs" c="gray.8">
          {hint}
        </Text>
      )}
    </>
  );
  if (to)
    return (
      <Paper
        withBorder
        p="md"
        data-testid={testid}
        component={Link}
        to={to}
        style={{ textDecoration: 'none' }}
      >
        {body}
      </Paper>
    );
  return (
    <Paper withBorder p="md" data-testid={testid}>
      {body}
    </Paper>
  );
}

export default function Overview() {
  const stats = useQuery({
    queryKey: ['stats'],
    queryFn: ({ signal }) => api.get<{ data: Stats }>('/tenant/stats', undefined, signal).then((r) => r.data),
    refetchInterval: 15_000,
  });

  return (
    <Stack>
      <PageTitle>Overview</PageTitle>
      <QueryState query={stats} loadingLabel="Loading the workspace's figures…">
        {(s) => {
          const series = s.events_per_minute.map((p) => ({
            minute: new Date(p.minute).toLocaleTimeString('en', { hour: '2-digit', minute: '2-digit' }),
            events: p.count,
          }));
          const total = s.events_per_minute.reduce((a, p) => a + p.count, 0);
          return (
            <Stack>
              <SimpleGrid cols={{ base: 1, xs: 2, md: 3, xl: 6 }}>
                <Stat label="Profiles" value={fmtNumber(s.profiles)} testid="stat-profiles" to="/profiles" />
                <Stat
                  label="New today"
                  value={fmtNumber(s.profiles_new_today)}
                  hint="profiles created since 00:00 UTC"
                  testid="stat-new-today"
                />
                <Stat
                  label="Revenue"
                  value={s.revenue.length === 0 ? '—' : fmtMoney(s.revenue[0]?.total, s.revenue[0]?.currency)}
                  hint={
                    s.revenue.length === 0
                      ? 'no completed orders'
                      : s.revenue
                          .map((r, i) =>
                            i === 0
                              ? `${fmtNumber(r.orders)} orders`
                              : `${fmtMoney(r.total, r.currency)} in ${fmtNumber(r.orders)} orders`,
                          )
                          .join(' · ')
                  }
                  testid="stat-revenue"
                  to="/orders"
                />
                <Stat
                  label="Ingestion backlog"
                  value={fmtNumber(s.ingestion_backlog)}
                  hint="events waiting to be processed"
                  testid="stat-backlog"
                />
                <Stat
                  label="Processing lag"
                  value={fmtDuration(s.processing_lag_seconds)}
                  hint={
                    s.processing_lag_seconds === null ? 'nothing waiting' : 'age of the oldest waiting event'
                  }
                  testid="stat-lag"
                />
                <Stat
                  label="Dead letters"
                  value={fmtNumber(s.dead_letters)}
                  hint="events that could not be processed"
                  testid="stat-dead-letters"
                  to="/dead-letters"
                />
              </SimpleGrid>
              <Card withBorder>
                <Group justify="space-between" mb="sm">
                  <Title order={2} size="h4">
                    Events per minute, last hour
                  </Title>
                  <Text size="xs" c="gray.8">
                    {fmtNumber(total)} events · as of {fmtTime(s.generated_at)}
                  </Text>
                </Group>
                <div
                  data-testid="events-chart"
                  role="img"
                  aria-label={`Events per minute over the last hour: ${total} events in all`}
                >
                  <AreaChart
                    h={260}
                    data={series}
                    dataKey="minute"
                    series={[{ name: 'events', label: 'Events', color: 'indigo.6' }]}
                    curveType="monotone"
                    withDots={false}
                    tickLine="y"
                  />
                </div>
              </Card>
            </Stack>
          );
        }}
      </QueryState>
    </Stack>
  );
}
