// A browser page importing the browser entry and the client: bundled by Vite with no Node module.
import { connectBrowser } from 'backstep/browser';
import { GameClient } from 'backstep/client';

globalThis.backstepLoaded = typeof connectBrowser === 'function' && typeof GameClient === 'function';
