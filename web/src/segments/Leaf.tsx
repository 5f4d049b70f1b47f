import {
  Group,
  JsonInput,
  MultiSelect,
  SegmentedControl,
  Select,
  Stack,
  Switch,
  Text,
  TextInput,
} from '@mantine/core';
import { useState } from 'react';
import { WhereEditor, WindowEditor } from './filters';
import {
  EVENT_TYPES,
  FIELDS,
  type Node,
  OPS,
  ORDER_STATUSES,
  opsForField,
  reshapeValues,
  scalarTypeOfField,
} from './form';
import { ComparisonEditor, TestEditor } from './inputs';

/** What a leaf condition's editor needs of the builder's props. */
export interface LeafProps {
  node: Node;
  onChange: (next: Node) => void;
  segmentOptions: { value: string; label: string }[];
  readOnly?: boolean;
}

export function Leaf({ node, onChange, segmentOptions, readOnly }: LeafProps) {
  switch (node.kind) {
    case 'field':
      return (
        <Group gap={4} wrap="wrap">
          <Select
            aria-label="profile field"
            size="xs"
            w={160}
            data={Object.keys(FIELDS)}
            value={node.field}
            allowDeselect={false}
            disabled={readOnly}
            onChange={(f) => {
              if (!f) return;
              const ops = opsForField(f);
              const op = ops.includes(node.op) ? node.op : 'eq';
              const t = scalarTypeOfField(f);
              onChange({
                ...node,
                field: f,
                op,
                values: reshapeValues(
                  op,
                  node.values.map((v) => ({ ...v, t })),
                  t,
                ),
              });
            }}
            data-testid="builder-field"
          />
          <TestEditor
            op={node.op}
            values={node.values}
            ops={opsForField(node.field)}
            fixedType={scalarTypeOfField(node.field)}
            readOnly={readOnly}
            onChange={(op, values) => onChange({ ...node, op, values })}
          />
        </Group>
      );
    case 'attribute':
      return (
        <Group gap={4} wrap="wrap">
          <TextInput
            aria-label="attribute path"
            placeholder="plan.tier"
            size="xs"
            w={170}
            value={node.path}
            readOnly={readOnly}
            onChange={(e) => onChange({ ...node, path: e.currentTarget.value })}
            data-testid="builder-attribute"
          />
          <TestEditor
            op={node.op}
            values={node.values}
            ops={OPS}
            readOnly={readOnly}
            onChange={(op, values) => onChange({ ...node, op, values })}
          />
        </Group>
      );
    case 'event':
      return (
        <Stack gap={4}>
          <Group gap={4} wrap="wrap">
            <Select
              aria-label="event type"
              size="xs"
              w={120}
              data={[{ value: '', label: 'any type' }, ...EVENT_TYPES.map((t) => ({ value: t, label: t }))]}
              value={node.type}
              allowDeselect={false}
              disabled={readOnly}
              onChange={(t) => onChange({ ...node, type: t ?? '' })}
            />
            <TextInput
              aria-label="event name"
              placeholder="any name"
              size="xs"
              w={190}
              value={node.name}
              readOnly={readOnly}
              onChange={(e) => onChange({ ...node, name: e.currentTarget.value })}
              data-testid="builder-event-name"
            />
            <WindowEditor
              value={node.window}
              readOnly={readOnly}
              onChange={(window) => onChange({ ...node, window })}
            />
          </Group>
          <WhereEditor
            where={node.where}
            readOnly={readOnly}
            onChange={(where) => onChange({ ...node, where })}
          />
          <Group gap={4}>
            <Switch
              size="xs"
              label="count"
              checked={node.count !== null}
              disabled={readOnly}
              onChange={(e) =>
                onChange({
                  ...node,
                  count: e.currentTarget.checked ? { op: 'gte', values: [{ t: 'number', v: '1' }] } : null,
                })
              }
            />
            {node.count ? (
              <ComparisonEditor
                label="times"
                value={node.count}
                readOnly={readOnly}
                onChange={(count) => onChange({ ...node, count })}
              />
            ) : (
              <Text size="xs" c="gray.7">
                (at least once)
              </Text>
            )}
          </Group>
        </Stack>
      );
    case 'order':
      return (
        <Stack gap={4}>
          <Group gap={4} wrap="wrap" align="flex-end">
            <MultiSelect
              aria-label="order status"
              placeholder={node.status.length ? undefined : 'completed (default)'}
              size="xs"
              w={240}
              data={[...ORDER_STATUSES]}
              value={node.status}
              disabled={readOnly}
              onChange={(s) => onChange({ ...node, status: s, statusIsList: s.length > 1 })}
            />
            <WindowEditor
              value={node.window}
              readOnly={readOnly}
              onChange={(window) => onChange({ ...node, window })}
            />
          </Group>
          <Group gap={4} wrap="wrap">
            <TextInput
              aria-label="product id"
              placeholder="product id"
              size="xs"
              w={140}
              value={node.product_id}
              readOnly={readOnly}
              onChange={(e) => onChange({ ...node, product_id: e.currentTarget.value })}
            />
            <TextInput
              aria-label="category"
              placeholder="category"
              size="xs"
              w={140}
              value={node.category}
              readOnly={readOnly}
              onChange={(e) => onChange({ ...node, category: e.currentTarget.value })}
            />
            <TextInput
              aria-label="currency"
              placeholder="currency (EUR)"
              size="xs"
              w={120}
              value={node.currency}
              readOnly={readOnly}
              onChange={(e) => onChange({ ...node, currency: e.currentTarget.value.toUpperCase() })}
            />
          </Group>
          <Group gap={4} wrap="wrap">
            <SegmentedControl
              size="xs"
              aria-label="what to compare"
              data={[
                { value: 'none', label: 'at least one' },
                { value: 'count', label: 'count' },
                { value: 'sum', label: 'sum of totals' },
              ]}
              value={node.measure}
              disabled={readOnly}
              onChange={(m) => onChange({ ...node, measure: m as 'none' | 'count' | 'sum' })}
            />
            {node.measure !== 'none' && (
              <ComparisonEditor
                label=""
                value={node.comparison}
                readOnly={readOnly}
                onChange={(comparison) => onChange({ ...node, comparison })}
              />
            )}
          </Group>
        </Stack>
      );
    case 'segment':
      return (
        <Select
          aria-label="segment"
          size="xs"
          w={320}
          placeholder="choose a saved segment"
          data={
            node.segment && !segmentOptions.some((o) => o.value === node.segment)
              ? [...segmentOptions, { value: node.segment, label: node.segment }]
              : segmentOptions
          }
          searchable
          value={node.segment || null}
          disabled={readOnly}
          onChange={(s) => onChange({ ...node, segment: s ?? '' })}
        />
      );
    case 'raw':
      return <RawEditor node={node} onChange={onChange} readOnly={readOnly} />;
    default:
      return null;
  }
}

function RawEditor({
  node,
  onChange,
  readOnly,
}: {
  node: Extract<Node, { kind: 'raw' }>;
  onChange: (n: Node) => void;
  readOnly?: boolean;
}) {
  const [text, setText] = useState(JSON.stringify(node.json, null, 2));
  return (
    <JsonInput
      label="Condition as JSON (a shape the builder does not edit)"
      size="xs"
      autosize
      minRows={2}
      validationError="Not valid JSON"
      value={text}
      readOnly={readOnly}
      onChange={(t) => {
        setText(t);
        try {
          onChange({ ...node, json: JSON.parse(t) });
        } catch {
          // keep the last valid JSON until the text parses
        }
      }}
    />
  );
}
