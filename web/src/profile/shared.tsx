import { Text } from '@mantine/core';
import { api } from '../api/client';

// What the profile page's parts share: one fetch of a `{data}` answer, and a labelled value.

export const get =
  <T,>(path: string) =>
  ({ signal }: { signal: AbortSignal }) =>
    api.get<{ data: T }>(path, undefined, signal).then((r) => r.data);

export function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" fw={700} c="gray.8" tt="uppercase">
        {label}
      </Text>
      <Text size="sm" style={{ wordBreak: 'break-word' }}>
        {children}
      </Text>
    </div>
  );
}
