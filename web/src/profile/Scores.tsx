import { Badge, Card, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { Churn, Clv } from '../api/types';
import { QueryState } from '../components/states';
import { fmtMoney, fmtNumber, fmtPercent, fmtTime } from '../lib/format';
import { Field, get } from './shared';

// The profile's scores (predicted CLV and churn risk).

export function Predictions({ id }: { id: string }) {
  const clv = useQuery({ queryKey: ['clv', id], queryFn: get<Clv>(`/intelligence/clv/${id}`) });
  const churn = useQuery({ queryKey: ['churn', id], queryFn: get<Churn>(`/intelligence/churn/${id}`) });
  return (
    <Card withBorder data-testid="profile-predictions">
      <Title order={2} size="h5" mb="xs">
        CLV and churn
      </Title>
      <SimpleGrid cols={2}>
        <QueryState query={clv}>
          {(c) => (
            <Stack gap={4}>
              <Field label={`Predicted CLV (${c.horizon_days} days)`}>
                {fmtMoney(c.predicted_clv, c.currency)}
              </Field>
              <Field label="Expected purchases">{fmtNumber(c.expected_purchases, 2)}</Field>
              <Field label="Expected order value">{fmtMoney(c.expected_order_value, c.currency)}</Field>
              <Field label="P(alive)">{fmtPercent(c.p_alive)}</Field>
            </Stack>
          )}
        </QueryState>
        <QueryState query={churn}>
          {(c) => (
            <Stack gap={4}>
              <Field label="Churn risk">
                {fmtPercent(c.churn_risk_score)}{' '}
                {c.risk_level && (
                  <Badge
                    color={c.risk_level === 'high' ? 'red' : c.risk_level === 'medium' ? 'orange' : 'teal'}
                    variant="light"
                  >
                    {c.risk_level}
                  </Badge>
                )}
              </Field>
              <Field label="Days since last order">{fmtNumber(c.days_since_last_order)}</Field>
              <Field label="At-risk threshold">{fmtPercent(c.threshold)}</Field>
              <Field label="Model">
                {c.model ? `${c.model.name}, fitted ${fmtTime(c.model.fitted_at)}` : 'not fitted yet'}
              </Field>
            </Stack>
          )}
        </QueryState>
      </SimpleGrid>
      {clv.data && clv.data.predicted_clv === null && (
        <Text size="xs" c="gray.7" mt="xs">
          Predictions appear once the profile has a completed order and the workspace has a fitted model.
        </Text>
      )}
    </Card>
  );
}
