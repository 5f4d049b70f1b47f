/** The Intelligence page's workspace at a glance: the RFM heatmap and the CLV and churn-risk histograms. */
import { BarChart, MatrixChart } from '@mantine/charts';
import { Card, Grid, SimpleGrid, Table, Text, Title } from '@mantine/core';
import type { IntelligenceSummary } from '../api/types';
import { fmtNumber } from '../lib/format';

const R_LABELS = ['R 5', 'R 4', 'R 3', 'R 2', 'R 1'];
const F_LABELS = ['F 1', 'F 2', 'F 3', 'F 4', 'F 5'];

/** One request draws the grid and both histograms (GET /intelligence/summary; a viewer may read it). */
export function RfmGrid({ summary }: { summary: IntelligenceSummary }) {
  const { rfm } = summary;
  // An empty cell is drawn empty (null), not in the darkest shade of an all-zero grid.
  const data = rfm.grid.flatMap((row, i) =>
    row.map((value, j) => ({ x: F_LABELS[j]!, y: R_LABELS[i]!, value: value > 0 ? value : null })),
  );
  return (
    <Grid>
      <Grid.Col span={{ base: 12, md: 7 }}>
        <MatrixChart
          data={data}
          xLabels={F_LABELS}
          yLabels={R_LABELS}
          withXLabels
          withYLabels
          xLabelsRotation={0}
          xLabelsHeight={28}
          cellSize={54}
          gap={3}
          colors={['indigo.1', 'indigo.3', 'indigo.5', 'indigo.7']}
          emptyColor="gray.1"
          withTooltip
          getTooltipLabel={(c) => `${c.y} · ${c.x}: ${fmtNumber(c.value ?? 0)} profiles`}
          withLegend
          legendLabels={['Fewer', 'More']}
          aria-label="RFM grid: recency score (rows, 5 most recent) against frequency score (columns); each cell is coloured by its number of profiles"
          role="img"
          data-testid="rfm-grid"
        />
        <Text size="xs" c="gray.7">
          {fmtNumber(rfm.profiles_gridded)} of {fmtNumber(summary.profiles_scored)} scored profiles placed
          {rfm.profiles_gridded < summary.profiles_scored
            ? '; the others were scored before R and F were stored and are placed by the next fit.'
            : '.'}
        </Text>
      </Grid.Col>
      <Grid.Col span={{ base: 12, md: 5 }}>
        <Table fz="sm" data-testid="rfm-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Segment</Table.Th>
              <Table.Th ta="right">Profiles</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rfm.segments.map((s) => (
              <Table.Tr key={s.segment}>
                <Table.Td>{s.segment.replaceAll('_', ' ')}</Table.Td>
                <Table.Td ta="right">{fmtNumber(s.profiles)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Grid.Col>
    </Grid>
  );
}

export function Distributions({ summary }: { summary: IntelligenceSummary }) {
  const { clv, churn_risk } = summary;
  const clvData = clv.buckets.map((b) => ({
    bucket: b.to === null ? `${b.from}+` : `${b.from}–${b.to}`,
    profiles: b.profiles,
  }));
  const churnData = churn_risk.buckets.map((b) => ({
    bucket: `${Math.round(b.from * 100)}–${Math.round(b.to * 100)} %`,
    profiles: b.profiles,
  }));
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Card withBorder>
        <Title order={3} size="h5" mb="xs">
          Predicted CLV
        </Title>
        <BarChart
          h={220}
          data={clvData}
          dataKey="bucket"
          series={[{ name: 'profiles', label: 'Profiles', color: 'indigo.6' }]}
          data-testid="clv-distribution"
        />
        <Text size="xs" c="gray.7" data-testid="clv-stats">
          {`min ${fmtNumber(clv.min, 2)} · median ${fmtNumber(clv.median, 2)} · max ${fmtNumber(clv.max, 2)} · total ${fmtNumber(clv.total, 2)}`}
        </Text>
      </Card>
      <Card withBorder>
        <Title order={3} size="h5" mb="xs">
          Churn risk
        </Title>
        <BarChart
          h={220}
          data={churnData}
          dataKey="bucket"
          series={[{ name: 'profiles', label: 'Profiles', color: 'red.7' }]}
          data-testid="churn-distribution"
        />
      </Card>
    </SimpleGrid>
  );
}
