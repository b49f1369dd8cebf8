import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { PayPage } from './PayPage.tsx';
import './pay.css';

const root = document.getElementById('root');
if (root === null) throw new Error('pay.html lacks #root');
createRoot(root).render(
  <StrictMode>
    <PayPage />
  </StrictMode>,
);
