import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import './app.css';
import {
  type CSSVariablesResolver,
  createTheme,
  DEFAULT_THEME,
  type MantineColorsTuple,
  MantineProvider,
} from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './App';
import { ApiError, isTransient, retryDelay } from './api/client';
import { SessionProvider } from './api/session';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 503 (database down) or 429 passes by itself: keep trying, as long as the server says to
      // wait (Retry-After). Other errors are final and shown at once.
      retry: (failures, err) => isTransient(err) && failures < 30,
      retryDelay,
      staleTime: 10_000,
      refetchOnWindowFocus: false,
    },
    mutations: {
      retry: (failures, err) => err instanceof ApiError && err.status === 503 && failures < 3,
      retryDelay,
    },
  },
});

// Contrast (axe-core checks every page): light variants write shade 9 on shade 1, which is under
// 4.5:1 for orange, teal, green and yellow; their shade 9 is darkened until it passes.
const darker = (name: keyof typeof DEFAULT_THEME.colors, nine: string): MantineColorsTuple => {
  const c = [...(DEFAULT_THEME.colors[name] ?? [])];
  c[9] = nine;
  return c as unknown as MantineColorsTuple;
};

const theme = createTheme({
  // Modals and menus appear at once for people who ask their system for less motion.
  respectReducedMotion: true,
  primaryColor: 'indigo',
  primaryShade: 8,
  colors: {
    orange: darker('orange', '#9c3a05'),
    teal: darker('teal', '#05644a'),
    green: darker('green', '#1d6a2e'),
    yellow: darker('yellow', '#7a5200'),
  },
  components: {
    // Wide tables scroll sideways in a narrow window; a keyboard user must be able to reach and
    // scroll them too (axe: scrollable-region-focusable), so the scrolling box takes focus.
    TableScrollContainer: { defaultProps: { type: 'native', tabIndex: 0 } },
    // A dialog's close button is an icon: it needs a name for screen readers (axe: button-name).
    Modal: { defaultProps: { closeButtonProps: { 'aria-label': 'Close dialog' } } },
    // Links are told from text by more than colour (axe: link-in-text-block).
    Anchor: { defaultProps: { underline: 'always' } },
  },
  defaultRadius: 'md',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
});

// "Dimmed" text (input descriptions) is gray 6 by default: 3.3:1 on white. Gray 7 reads at 7:1.
const cssVariables: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    // Error text (an input's message) is red 6 by default: under 4.5:1 on white. Red 8 passes.
    '--mantine-color-error': 'var(--mantine-color-red-8)',
  },
  dark: {},
});

const root = document.getElementById('root');
if (!root) throw new Error('no #root');
createRoot(root).render(
  <StrictMode>
    <MantineProvider theme={theme} cssVariablesResolver={cssVariables} defaultColorScheme="light">
      <QueryClientProvider client={queryClient}>
        <BrowserRouter>
          <SessionProvider>
            <App />
          </SessionProvider>
        </BrowserRouter>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
