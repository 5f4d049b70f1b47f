import { ActionIcon, Button, Group, Select, Text, TextInput } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import {
  arityOf,
  COUNT_OPS,
  type Comparison,
  type CountOp,
  OP_LABELS,
  type Op,
  reshapeValues,
  type Scalar,
} from './form';

// The inputs of a condition's test: an operator and its values, typed as the operator asks.

function ScalarInput({
  value,
  onChange,
  label,
  fixedType,
  readOnly,
}: {
  value: Scalar;
  onChange: (s: Scalar) => void;
  label: string;
  fixedType?: Scalar['t'];
  readOnly?: boolean;
}) {
  const t = fixedType ?? value.t;
  return (
    <Group gap={4} wrap="nowrap" align="flex-end">
      {!fixedType && (
        <Select
          aria-label={`${label} type`}
          size="xs"
          w={96}
          data={[
            { value: 'string', label: 'text' },
            { value: 'number', label: 'number' },
            { value: 'boolean', label: 'yes/no' },
          ]}
          value={t}
          allowDeselect={false}
          disabled={readOnly}
          onChange={(v) =>
            onChange({ t: (v as Scalar['t']) ?? 'string', v: v === 'boolean' ? 'true' : value.v })
          }
        />
      )}
      {t === 'boolean' ? (
        <Select
          aria-label={label}
          size="xs"
          w={90}
          data={['true', 'false']}
          value={value.v === 'false' ? 'false' : 'true'}
          allowDeselect={false}
          disabled={readOnly}
          onChange={(v) => onChange({ t, v: v ?? 'true' })}
        />
      ) : (
        <TextInput
          aria-label={label}
          size="xs"
          w={t === 'number' ? 110 : 180}
          value={value.v}
          inputMode={t === 'number' ? 'decimal' : undefined}
          readOnly={readOnly}
          onChange={(e) => onChange({ t, v: e.currentTarget.value })}
          error={t === 'number' && value.v.trim() !== '' && !Number.isFinite(Number(value.v))}
        />
      )}
    </Group>
  );
}

function ValuesInput({
  op,
  values,
  onChange,
  fixedType,
  readOnly,
}: {
  op: Op | CountOp;
  values: Scalar[];
  onChange: (v: Scalar[]) => void;
  fixedType?: Scalar['t'];
  readOnly?: boolean;
}) {
  const arity = arityOf(op);
  if (arity === 'none') return null;
  const set = (i: number, s: Scalar) => onChange(values.map((v, j) => (j === i ? s : v)));
  if (arity === 'one')
    return (
      <ScalarInput
        label="value"
        value={values[0] ?? { t: fixedType ?? 'string', v: '' }}
        onChange={(s) => set(0, s)}
        fixedType={fixedType}
        readOnly={readOnly}
      />
    );
  if (arity === 'two')
    return (
      <Group gap={4} wrap="wrap">
        <ScalarInput
          label="from"
          value={values[0] ?? { t: 'string', v: '' }}
          onChange={(s) => set(0, s)}
          fixedType={fixedType}
          readOnly={readOnly}
        />
        <Text size="xs">and</Text>
        <ScalarInput
          label="to"
          value={values[1] ?? { t: 'string', v: '' }}
          onChange={(s) => set(1, s)}
          fixedType={fixedType}
          readOnly={readOnly}
        />
      </Group>
    );
  return (
    <Group gap={4} wrap="wrap">
      {values.map((v, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: controlled inputs without state of their own; the position is the identity
        <Group key={`${i}-${values.length}`} gap={2} wrap="nowrap">
          <ScalarInput
            label={`value ${i + 1}`}
            value={v}
            onChange={(s) => set(i, s)}
            fixedType={fixedType}
            readOnly={readOnly}
          />
          {!readOnly && values.length > 1 && (
            <ActionIcon
              size="sm"
              variant="subtle"
              color="gray"
              aria-label={`Remove value ${i + 1}`}
              onClick={() => onChange(values.filter((_, j) => j !== i))}
            >
              <IconTrash size={14} />
            </ActionIcon>
          )}
        </Group>
      ))}
      {!readOnly && values.length < 100 && (
        <Button
          size="compact-xs"
          variant="subtle"
          onClick={() =>
            onChange([...values, { t: fixedType ?? values[values.length - 1]?.t ?? 'string', v: '' }])
          }
        >
          + value
        </Button>
      )}
    </Group>
  );
}

function OpSelect({
  value,
  ops,
  onChange,
  readOnly,
}: {
  value: string;
  ops: readonly string[];
  onChange: (op: string) => void;
  readOnly?: boolean;
}) {
  return (
    <Select
      aria-label="operator"
      size="xs"
      w={170}
      data={ops.map((o) => ({ value: o, label: OP_LABELS[o as Op] ?? o }))}
      value={value}
      allowDeselect={false}
      disabled={readOnly}
      onChange={(v) => v && onChange(v)}
      data-testid="builder-op"
    />
  );
}

export function TestEditor({
  op,
  values,
  ops,
  fixedType,
  onChange,
  readOnly,
}: {
  op: Op;
  values: Scalar[];
  ops: readonly Op[];
  fixedType?: Scalar['t'];
  onChange: (op: Op, values: Scalar[]) => void;
  readOnly?: boolean;
}) {
  return (
    <>
      <OpSelect
        value={op}
        ops={ops}
        readOnly={readOnly}
        onChange={(o) => onChange(o as Op, reshapeValues(o as Op, values, fixedType))}
      />
      <ValuesInput
        op={op}
        values={values}
        fixedType={fixedType}
        readOnly={readOnly}
        onChange={(v) => onChange(op, v)}
      />
    </>
  );
}

export function ComparisonEditor({
  label,
  value,
  onChange,
  readOnly,
}: {
  label: string;
  value: Comparison;
  onChange: (c: Comparison) => void;
  readOnly?: boolean;
}) {
  return (
    <Group gap={4} wrap="wrap">
      <Text size="xs">{label}</Text>
      <OpSelect
        value={value.op}
        ops={COUNT_OPS}
        readOnly={readOnly}
        onChange={(o) =>
          onChange({ op: o as CountOp, values: reshapeValues(o as CountOp, value.values, 'number') })
        }
      />
      <ValuesInput
        op={value.op}
        values={value.values}
        fixedType="number"
        readOnly={readOnly}
        onChange={(v) => onChange({ ...value, values: v })}
      />
    </Group>
  );
}
