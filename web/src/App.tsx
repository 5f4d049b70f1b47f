import { AppShell, Badge, Burger, Button, Group, NavLink, Stack, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconActivity,
  IconAlertTriangle,
  IconBrain,
  IconBuilding,
  IconChartPie,
  IconHistory,
  IconHome,
  IconKey,
  IconLogout,
  IconPackage,
  IconSettings,
  IconShoppingCart,
  IconUsers,
  IconWebhook,
} from '@tabler/icons-react';
import { lazy, type ReactNode, Suspense } from 'react';
import { Link, Route, Routes, useLocation } from 'react-router';
import { abilitiesOf, useSession, useSessionState } from './api/session';
import { Loading } from './components/states';
import { SignIn } from './pages/SignIn';

const Overview = lazy(() => import('./pages/Overview'));
const LiveEvents = lazy(() => import('./pages/LiveEvents'));
const Profiles = lazy(() => import('./pages/Profiles'));
const ProfileDetail = lazy(() => import('./pages/ProfileDetail'));
const Segments = lazy(() => import('./pages/Segments'));
const SegmentEditor = lazy(() => import('./pages/SegmentEditor'));
const Accounts = lazy(() => import('./pages/Accounts'));
const AccountDetail = lazy(() => import('./pages/AccountDetail'));
const Orders = lazy(() => import('./pages/Orders'));
const Products = lazy(() => import('./pages/Products'));
const Intelligence = lazy(() => import('./pages/Intelligence'));
const ApiKeys = lazy(() => import('./pages/ApiKeys'));
const Webhooks = lazy(() => import('./pages/Webhooks'));
const Settings = lazy(() => import('./pages/Settings'));
const DeadLetters = lazy(() => import('./pages/DeadLetters'));
const AuditLog = lazy(() => import('./pages/AuditLog'));
const NotFound = lazy(() => import('./pages/NotFound'));

interface NavItem {
  to: string;
  label: string;
  testid: string;
  icon: ReactNode;
  adminOnly?: boolean;
}

const NAV: NavItem[] = [
  { to: '/', label: 'Overview', testid: 'nav-overview', icon: <IconHome size={18} /> },
  { to: '/events', label: 'Live events', testid: 'nav-events', icon: <IconActivity size={18} /> },
  { to: '/profiles', label: 'Profiles', testid: 'nav-profiles', icon: <IconUsers size={18} /> },
  { to: '/segments', label: 'Segments', testid: 'nav-segments', icon: <IconChartPie size={18} /> },
  { to: '/accounts', label: 'Accounts', testid: 'nav-accounts', icon: <IconBuilding size={18} /> },
  { to: '/orders', label: 'Orders', testid: 'nav-orders', icon: <IconShoppingCart size={18} /> },
  { to: '/products', label: 'Products', testid: 'nav-products', icon: <IconPackage size={18} /> },
  { to: '/intelligence', label: 'Intelligence', testid: 'nav-intelligence', icon: <IconBrain size={18} /> },
  {
    to: '/activations/webhooks',
    label: 'Webhooks',
    testid: 'nav-webhooks',
    icon: <IconWebhook size={18} />,
    adminOnly: true,
  },
  {
    to: '/dead-letters',
    label: 'Dead letters',
    testid: 'nav-dead-letters',
    icon: <IconAlertTriangle size={18} />,
  },
  {
    to: '/settings/keys',
    label: 'API keys',
    testid: 'nav-keys',
    icon: <IconKey size={18} />,
    adminOnly: true,
  },
  {
    to: '/audit-log',
    label: 'Audit log',
    testid: 'nav-audit-log',
    icon: <IconHistory size={18} />,
    adminOnly: true,
  },
  {
    to: '/settings',
    label: 'Settings',
    testid: 'nav-settings',
    icon: <IconSettings size={18} />,
    adminOnly: true,
  },
];

function isActive(pathname: string, to: string): boolean {
  if (to === '/') return pathname === '/';
  if (to === '/settings') return pathname === '/settings';
  return pathname === to || pathname.startsWith(`${to}/`);
}

function Shell() {
  const session = useSession();
  const { signOut } = useSessionState();
  const [opened, { toggle, close }] = useDisclosure();
  const { pathname } = useLocation();
  const can = abilitiesOf(session.scopes);
  const access = can.admin ? 'admin' : can.write ? 'editor' : 'read-only';

  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 230, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger
              opened={opened}
              onClick={toggle}
              hiddenFrom="sm"
              size="sm"
              aria-label="Toggle navigation"
            />
            <Text fw={700} component={Link} to="/" c="indigo.8" style={{ textDecoration: 'none' }}>
              cdp console
            </Text>
            <Text size="sm" c="gray.8" visibleFrom="xs" truncate data-testid="workspace-name">
              {session.workspace_name}
            </Text>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <Badge
              variant="light"
              color={access === 'read-only' ? 'gray' : 'indigo'}
              title={`Signed in with key ${session.key_name ?? session.key_id}: ${session.scopes.join(', ')}`}
              data-testid="session-access"
            >
              {access}
            </Badge>
            <Button
              variant="subtle"
              size="xs"
              leftSection={<IconLogout size={16} />}
              onClick={() => void signOut()}
              data-testid="signout"
            >
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main navigation">
        <AppShell.Section grow style={{ overflowY: 'auto' }}>
          <Stack gap={2}>
            {NAV.filter((n) => !n.adminOnly || can.admin).map((n) => (
              <NavLink
                key={n.to}
                component={Link}
                to={n.to}
                label={n.label}
                leftSection={n.icon}
                active={isActive(pathname, n.to)}
                onClick={close}
                data-testid={n.testid}
              />
            ))}
          </Stack>
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main id="main" tabIndex={-1}>
        <Suspense fallback={<Loading label="Loading page…" />}>
          <Routes>
            <Route path="/" element={<Overview />} />
            <Route path="/events" element={<LiveEvents />} />
            <Route path="/profiles" element={<Profiles />} />
            <Route path="/profiles/:id" element={<ProfileDetail />} />
            <Route path="/segments" element={<Segments />} />
            <Route path="/segments/new" element={<SegmentEditor />} />
            <Route path="/segments/:id" element={<SegmentEditor />} />
            <Route path="/accounts" element={<Accounts />} />
            <Route path="/accounts/:id" element={<AccountDetail />} />
            <Route path="/orders" element={<Orders />} />
            <Route path="/products" element={<Products />} />
            <Route path="/intelligence" element={<Intelligence />} />
            <Route path="/activations/webhooks" element={<Webhooks />} />
            <Route path="/settings/keys" element={<ApiKeys />} />
            <Route path="/settings" element={<Settings />} />
            <Route path="/dead-letters" element={<DeadLetters />} />
            <Route path="/audit-log" element={<AuditLog />} />
            <Route path="*" element={<NotFound />} />
          </Routes>
        </Suspense>
      </AppShell.Main>
    </AppShell>
  );
}

export function App() {
  const { state } = useSessionState();
  if (state.status === 'loading') return <Loading label="Checking your session…" />;
  if (state.status === 'signed-out') return <SignIn notice={state.error} />;
  return <Shell />;
}
