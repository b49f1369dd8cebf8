import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
// The tokens first, the components' own rules with their modules, the page's layout last.
import '../tokens.css';
import { PayPage } from './PayPage.tsx';
import './pay.css';

const root = document.getElementById('root');
if (root === null) throw new Error('pay.html lacks #root');
createRoot(root).render(
  <StrictMode>
    <PayPage />
  </StrictMode>,
);
