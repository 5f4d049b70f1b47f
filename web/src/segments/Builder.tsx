import { ActionIcon, Badge, Button, Group, Menu, Paper, SegmentedControl, Stack, Text } from '@mantine/core';
import { IconPlus, IconTrash } from '@tabler/icons-react';
import { blank, type Node, type NodeKind } from './form';
import { Leaf } from './Leaf';

/** The visual editor of a segment query: one component per node kind, nested like the query. */

export interface BuilderProps {
  node: Node;
  onChange: (next: Node) => void;
  onRemove?: () => void;
  segmentOptions: { value: string; label: string }[];
  readOnly?: boolean;
  depth?: number;
}

const KIND_LABEL: Record<NodeKind, string> = {
  group: 'Group (and / or)',
  not: 'Not',
  field: 'Profile field',
  attribute: 'Attribute',
  event: 'Event history',
  order: 'Orders',
  segment: 'Other segment',
  raw: 'JSON',
};

const ADDABLE: NodeKind[] = ['field', 'attribute', 'event', 'order', 'segment', 'group'];

function AddMenu({ onAdd, label = 'Add condition' }: { onAdd: (k: NodeKind) => void; label?: string }) {
  return (
    <Menu position="bottom-start" withinPortal>
      <Menu.Target>
        <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} data-testid="builder-add">
          {label}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        {ADDABLE.map((k) => (
          <Menu.Item key={k} onClick={() => onAdd(k)} data-testid={`builder-add-${k}`}>
            {KIND_LABEL[k]}
          </Menu.Item>
        ))}
      </Menu.Dropdown>
    </Menu>
  );
}

export function Builder(props: BuilderProps) {
  const { node, onChange, onRemove, readOnly, depth = 0 } = props;
  const remove =
    onRemove && !readOnly ? (
      <ActionIcon
        variant="subtle"
        color="gray"
        aria-label={`Remove ${KIND_LABEL[node.kind].toLowerCase()}`}
        onClick={onRemove}
      >
        <IconTrash size={16} />
      </ActionIcon>
    ) : null;
  const negate =
    !readOnly && node.kind !== 'not' ? (
      <Button
        size="compact-xs"
        variant="subtle"
        color="gray"
        onClick={() => onChange({ kind: 'not', id: `${node.id}n`, child: node })}
        title="Wrap in NOT: match the profiles this does not match"
        data-testid="builder-negate"
      >
        negate (NOT)
      </Button>
    ) : null;

  if (node.kind === 'group') {
    const setChild = (i: number, c: Node) =>
      onChange({ ...node, children: node.children.map((x, j) => (j === i ? c : x)) });
    return (
      <Paper withBorder p="xs" bg={depth % 2 ? 'gray.0' : 'white'} data-testid="builder-group">
        <Stack gap="xs">
          <Group justify="space-between" wrap="nowrap">
            <Group gap="xs">
              <SegmentedControl
                size="xs"
                aria-label="combine conditions with"
                data={[
                  { value: 'and', label: 'ALL of (and)' },
                  { value: 'or', label: 'ANY of (or)' },
                ]}
                value={node.combinator}
                disabled={readOnly}
                onChange={(c) => onChange({ ...node, combinator: c as 'and' | 'or' })}
              />
              {negate}
            </Group>
            {remove}
          </Group>
          {node.children.length === 0 && (
            <Text size="sm" c="gray.7">
              No condition yet: add one.
            </Text>
          )}
          {node.children.map((c, i) => (
            <Builder
              key={c.id}
              {...props}
              depth={depth + 1}
              node={c}
              onChange={(n) => setChild(i, n)}
              onRemove={() => onChange({ ...node, children: node.children.filter((_, j) => j !== i) })}
            />
          ))}
          {!readOnly && (
            <AddMenu onAdd={(k) => onChange({ ...node, children: [...node.children, blank(k)] })} />
          )}
        </Stack>
      </Paper>
    );
  }
  if (node.kind === 'not') {
    return (
      <Paper withBorder p="xs" style={{ borderColor: 'var(--mantine-color-red-4)' }}>
        <Stack gap="xs">
          <Group justify="space-between">
            <Group gap="xs">
              <Badge color="red" variant="light">
                NOT
              </Badge>
              {!readOnly && (
                <Button size="compact-xs" variant="subtle" color="gray" onClick={() => onChange(node.child)}>
                  remove NOT
                </Button>
              )}
            </Group>
            {remove}
          </Group>
          <Builder
            {...props}
            depth={depth + 1}
            node={node.child}
            onChange={(child) => onChange({ ...node, child })}
            onRemove={undefined}
          />
        </Stack>
      </Paper>
    );
  }
  return (
    <Paper withBorder p="xs" data-testid={`builder-${node.kind}`}>
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <Stack gap={4} style={{ flex: 1 }}>
          <Group gap="xs">
            <Text size="xs" fw={700} c="indigo.8">
              {KIND_LABEL[node.kind]}
            </Text>
            {negate}
          </Group>
          <Leaf {...props} />
        </Stack>
        {remove}
      </Group>
    </Paper>
  );
}
