// The installation's brand: the title, logo and accent colour the
// platform gave (--ui-title, --ui-logo-url or --ui-logo-file,
// --ui-accent-color). The colour comes in brand.css; the title and logo
// in brand.json, applied here, so nothing inline is needed.
import {h, clear} from './dom.js';

let name = 'Herald';

// brandName is the name the page goes by.
export function brandName() {
  return name;
}

// applyBrand reads brand.json and shows its title and logo in the
// header. Without one (or when it cannot be read) the page stays Herald.
export async function applyBrand() {
  let b;
  try {
    const res = await fetch('brand.json', {cache: 'no-cache'});
    if (!res.ok) return;
    b = await res.json();
  } catch {
    return; // the defaults stay
  }
  if (b.title) name = b.title;
  const el = document.querySelector('.brand');
  clear(el, b.logo_url ? h('img', {src: b.logo_url, alt: '', class: 'brand-logo', id: 'brand-logo'}) : null,
    h('span', {id: 'brand-title'}, name));
  document.title = document.title.replace(/Herald$/, name);
}
