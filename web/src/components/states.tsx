import { Alert, Center, Code, Group, Loader, Stack, Text, Title } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ApiError, describeError, isTransient } from '../api/client';

/** The error of a request, in words, with the server's details when it gave some. */
export function ErrorAlert({ error, title }: { error: unknown; title?: string }) {
  const details = error instanceof ApiError ? error.details : [];
  const transient = isTransient(error);
  return (
    <Alert
      color={transient ? 'yellow' : 'red'}
      title={title ?? (transient ? 'Retrying' : 'Something went wrong')}
      role="alert"
      data-testid="error-state"
    >
      <Text size="sm">{describeError(error)}</Text>
      {details.length > 0 && (
        <Stack gap={2} mt="xs">
          {details.map((d) => (
            <Text size="xs" key={`${d.path}:${d.message}`}>
              <Code>{d.path || '/'}</Code> {d.message}
            </Text>
          ))}
        </Stack>
      )}
    </Alert>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <Center py="xl" aria-live="polite">
      <Group gap="sm">
        <Loader size="sm" aria-hidden />
        <Text size="sm" c="gray.7">
          {label}
        </Text>
      </Group>
    </Center>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Stack align="center" py="xl" gap={4} data-testid="empty-state">
      <Text fw={600}>{title}</Text>
      {children && (
        <Text size="sm" c="gray.7" ta="center" maw={520}>
          {children}
        </Text>
      )}
    </Stack>
  );
}

/**
 * Loading, error and (optionally) empty states of one query, then its content. While TanStack Query
 * retries a 503 or 429 the failure is shown as it happens ("the database is unavailable, retrying").
 */
export function QueryState<T>({
  query,
  children,
  isEmpty,
  empty,
  loadingLabel,
}: {
  query: UseQueryResult<T>;
  children: (data: T) => ReactNode;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  loadingLabel?: string;
}) {
  if (query.isPending) {
    if (query.failureReason) return <ErrorAlert error={query.failureReason} />;
    return <Loading label={loadingLabel} />;
  }
  if (query.isError) return <ErrorAlert error={query.error} />;
  if (isEmpty?.(query.data)) return <>{empty ?? <Empty title="Nothing here yet" />}</>;
  return (
    <>
      {query.failureReason != null && <ErrorAlert error={query.failureReason} />}
      {children(query.data)}
    </>
  );
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <Group justify="space-between" mb="md" wrap="wrap" gap="sm">
      <Title order={1} size="h2">
        {children}
      </Title>
      {actions}
    </Group>
  );
}

/** A page this key's scopes do not open: its title, and what it needs instead of its content. */
export function NeedsScope({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Stack>
      <PageTitle>{title}</PageTitle>
      <Alert color="gray">{children}</Alert>
    </Stack>
  );
}

export function JsonBlock({ value, maxHeight = 320 }: { value: unknown; maxHeight?: number }) {
  return (
    <Code block style={{ maxHeight, overflow: 'auto', whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
      {JSON.stringify(value, null, 2)}
    </Code>
  );
}
