import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { type ReactNode, useState } from 'react';
import { ErrorAlert } from './states';

/**
 * A confirmation dialog; with `typed`, the person must type that text before the action is enabled
 * (used for irreversible actions such as erasing a profile).
 */
export function ConfirmModal({
  opened,
  onClose,
  title,
  children,
  confirmLabel,
  onConfirm,
  busy,
  error,
  typed,
  color = 'red.9',
  testid,
}: {
  opened: boolean;
  onClose: () => void;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  busy?: boolean;
  error?: unknown;
  typed?: string;
  color?: string;
  testid?: string;
}) {
  const [text, setText] = useState('');
  const ok = !typed || text.trim() === typed;
  return (
    <Modal
      opened={opened}
      onClose={() => {
        setText('');
        onClose();
      }}
      title={title}
      centered
    >
      <Stack>
        {typeof children === 'string' ? <Text size="sm">{children}</Text> : children}
        {typed && (
          <TextInput
            label={`Type ${typed} to confirm`}
            value={text}
            onChange={(e) => setText(e.currentTarget.value)}
            data-testid={testid ? `${testid}-typed` : undefined}
            autoComplete="off"
          />
        )}
        {error != null && <ErrorAlert error={error} />}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color={color} onClick={onConfirm} loading={busy} disabled={!ok} data-testid={testid}>
            {confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
