import '@xyflow/react/dist/style.css';
import { ColorSwatch, Group, Text } from '@mantine/core';
import { Background, Controls, type Edge, MarkerType, type Node, ReactFlow } from '@xyflow/react';
import { useMemo } from 'react';
import type { IdentityGraph as Graph } from '../api/types';

const TYPE_COLOR: Record<string, string> = {
  email: '#1c7ed6',
  phone: '#2b8a3e',
  external_id: '#9c36b5',
  anonymous_id: '#868e96',
};

const short = (v: string) => (v.length > 28 ? `${v.slice(0, 26)}…` : v);

/**
 * The identity graph as a graph: the profile in the middle, its identifiers around it (coloured by
 * type), the links events made between identifiers (labelled with the event), and the profiles
 * merged into it on the outside.
 */
export default function IdentityGraph({ graph }: { graph: Graph }) {
  const { nodes, edges } = useMemo(() => {
    const nodes: Node[] = [];
    const edges: Edge[] = [];
    nodes.push({
      id: 'profile',
      position: { x: 10, y: 0 },
      data: { label: `Profile ${graph.profile_id.slice(0, 8)}…` },
      style: { background: '#3b5bdb', color: '#fff', fontWeight: 700, border: 'none', width: 180 },
    });
    // Rows, top to bottom: merged profiles, the profile, anonymous ids, identified ids (e-mail,
    // phone, CRM id). Edges leave a node at its bottom and enter at its top, and the links events
    // make go from an anonymous id to an identity, so every edge points down.
    const row = (count: number, i: number) => (i - (count - 1) / 2) * 250;
    const anonymous = graph.nodes.filter((n) => n.type === 'anonymous_id');
    const identified = graph.nodes.filter((n) => n.type !== 'anonymous_id');
    const place = (list: Graph['nodes'], y: number) =>
      list.forEach((n, i) => {
        nodes.push({
          id: n.id,
          position: { x: row(list.length, i), y },
          data: { label: `${n.type}: ${short(n.value)}` },
          style: { border: `2px solid ${TYPE_COLOR[n.type] ?? '#495057'}`, width: 220, fontSize: 12 },
        });
        edges.push({
          id: `has-${n.id}`,
          source: 'profile',
          target: n.id,
          style: { strokeDasharray: '4 4', stroke: '#adb5bd' },
        });
      });
    place(anonymous, 130);
    place(identified, anonymous.length ? 300 : 130);
    for (const e of graph.edges) {
      edges.push({
        id: `link-${e.from}-${e.to}-${e.event_id ?? e.created_at}`,
        source: e.from,
        target: e.to,
        label: e.event_id ? `event …${e.event_id.slice(-8)}` : 'linked',
        markerEnd: { type: MarkerType.ArrowClosed },
        style: { stroke: '#e8590c', strokeWidth: 2 },
        labelStyle: { fontSize: 10 },
      });
    }
    graph.merged_profile_ids.forEach((id, i) => {
      nodes.push({
        id: `merged-${id}`,
        position: { x: row(graph.merged_profile_ids.length, i), y: -150 },
        data: { label: `merged profile ${id.slice(0, 8)}…` },
        style: { background: '#fff4e6', border: '2px dashed #e8590c', width: 200, fontSize: 12 },
      });
      edges.push({
        id: `merged-${id}`,
        source: `merged-${id}`,
        target: 'profile',
        label: 'merged into',
        animated: true,
      });
    });
    return { nodes, edges };
  }, [graph]);

  return (
    <>
      <section
        style={{ height: 480, border: '1px solid var(--mantine-color-gray-3)', borderRadius: 8 }}
        data-testid="identity-graph"
        aria-label={`Identity graph: ${graph.nodes.length} identifiers, ${graph.edges.length} links made by events, ${graph.merged_profile_ids.length} merged profiles`}
      >
        {graph.nodes.length === 0 && graph.merged_profile_ids.length === 0 ? (
          <Text p="md" size="sm">
            This profile has no identifiers yet.
          </Text>
        ) : (
          <ReactFlow
            nodes={nodes}
            edges={edges}
            fitView
            nodesConnectable={false}
            proOptions={{ hideAttribution: false }}
          >
            <Background />
            <Controls showInteractive={false} />
          </ReactFlow>
        )}
      </section>
      <Group gap="md" mt={6} wrap="wrap">
        {Object.entries(TYPE_COLOR).map(([type, color]) => (
          <Group gap={4} key={type}>
            <ColorSwatch color={color} size={12} withShadow={false} />
            <Text size="xs">{type.replace('_', ' ')}</Text>
          </Group>
        ))}
        <Text size="xs" c="gray.7">
          orange arrow: an event linked the two · dashed: an identifier of the profile · above: profiles
          merged into it
        </Text>
      </Group>
    </>
  );
}
