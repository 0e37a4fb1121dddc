// A component of its own WIT (wit/inventory.wit), built with componentize-qjs
// and no toolhost SDK (issue 34): its exported functions become tools.

const ITEMS = [
  { sku: 'A-1', name: 'flour', count: 12, storage: 'shelf', hazards: { flammable: false, fragile: false, heavy: true }, priceCents: 189 },
  { sku: 'B-2', name: 'milk', count: 3, storage: 'fridge', hazards: { flammable: false, fragile: false, heavy: false }, priceCents: 99 },
  { sku: 'C-3', name: 'eggs', count: 30, storage: 'fridge', hazards: { flammable: false, fragile: true, heavy: false }, priceCents: null },
  { sku: 'D-4', name: 'lamp oil', count: 2, storage: 'shelf', hazards: { flammable: true, fragile: true, heavy: false }, priceCents: 450 },
];

export const stock = {
  items(storage, limit) {
    return ITEMS.filter((item) => storage === null || storage === undefined || item.storage === storage).slice(0, limit);
  },

  adjust(sku, change) {
    const item = ITEMS.find((item) => item.sku === sku);
    if (!item) {
      throw { tag: 'unknown-sku', val: sku };
    }
    switch (change.tag) {
      case 'add':
        return Math.min(item.count + change.val, 65535);
      case 'remove':
        if (change.val > item.count) {
          throw { tag: 'not-enough', val: item.count };
        }
        return item.count - change.val;
      default:
        return 0;
    }
  },

  value(lines) {
    return lines.reduce((sum, [price, count]) => sum + price * count, 0);
  },
};

export function about() {
  return 'componentize-qjs (QuickJS)';
}
