import { ActionIcon, Button, Group, NumberInput, Select, Stack, Text, TextInput } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import { OPS, type PropertyTest, type Window } from './form';
import { TestEditor } from './inputs';

// What narrows an event or order condition: its time window and its payload property tests.

export function WindowEditor({
  value,
  onChange,
  readOnly,
}: {
  value: Window;
  onChange: (w: Window) => void;
  readOnly?: boolean;
}) {
  return (
    <Group gap={4} wrap="wrap" align="flex-end">
      <Select
        aria-label="time window"
        size="xs"
        w={150}
        data={[
          { value: 'all', label: 'all time' },
          { value: 'within', label: 'in the last … days' },
          { value: 'range', label: 'between dates' },
        ]}
        value={value.mode}
        allowDeselect={false}
        disabled={readOnly}
        onChange={(m) =>
          onChange(
            m === 'within'
              ? { mode: 'within', within_days: { t: 'number', v: '30' } }
              : m === 'range'
                ? { mode: 'range', from: '', to: '' }
                : { mode: 'all' },
          )
        }
      />
      {value.mode === 'within' && (
        <NumberInput
          aria-label="days"
          size="xs"
          w={100}
          min={1}
          max={3650}
          value={value.within_days.v}
          readOnly={readOnly}
          onChange={(v) => onChange({ mode: 'within', within_days: { t: 'number', v: String(v) } })}
        />
      )}
      {value.mode === 'range' && (
        <>
          <TextInput
            aria-label="from (inclusive)"
            placeholder="from 2025-01-01"
            size="xs"
            w={170}
            value={value.from}
            readOnly={readOnly}
            onChange={(e) => onChange({ ...value, from: e.currentTarget.value })}
          />
          <TextInput
            aria-label="to (exclusive)"
            placeholder="to 2025-07-01"
            size="xs"
            w={170}
            value={value.to}
            readOnly={readOnly}
            onChange={(e) => onChange({ ...value, to: e.currentTarget.value })}
          />
        </>
      )}
    </Group>
  );
}

export function WhereEditor({
  where,
  onChange,
  readOnly,
}: {
  where: PropertyTest[];
  onChange: (w: PropertyTest[]) => void;
  readOnly?: boolean;
}) {
  const set = (i: number, w: PropertyTest) => onChange(where.map((x, j) => (j === i ? w : x)));
  return (
    <Stack gap={4}>
      {where.map((w, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: controlled inputs without state of their own; the position is the identity
        <Group key={`${i}-${where.length}`} gap={4} wrap="wrap">
          <Text size="xs">where</Text>
          <TextInput
            aria-label="payload property path"
            placeholder="price"
            size="xs"
            w={150}
            value={w.property}
            readOnly={readOnly}
            onChange={(e) => set(i, { ...w, property: e.currentTarget.value })}
          />
          <TestEditor
            op={w.op}
            values={w.values}
            ops={OPS}
            readOnly={readOnly}
            onChange={(op, values) => set(i, { ...w, op, values })}
          />
          {!readOnly && (
            <ActionIcon
              variant="subtle"
              color="gray"
              aria-label="Remove property test"
              onClick={() => onChange(where.filter((_, j) => j !== i))}
            >
              <IconTrash size={14} />
            </ActionIcon>
          )}
        </Group>
      ))}
      {!readOnly && where.length < 20 && (
        <Button
          size="compact-xs"
          variant="subtle"
          w="fit-content"
          onClick={() => onChange([...where, { property: '', op: 'eq', values: [{ t: 'string', v: '' }] }])}
        >
          + where (payload property)
        </Button>
      )}
    </Stack>
  );
}
