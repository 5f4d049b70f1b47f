export interface OrderItem {
  product_id: string | null;
  name: string | null;
  price: number | null;
  quantity: number;
  category: string | null;
}

export interface Order {
  order_id: string;
  profile_id: string | null;
  status: string;
  total: number;
  currency: string;
  items: OrderItem[];
  occurred_at: string;
  event_id: string;
  created_at: string;
  updated_at: string;
}

export interface Product {
  product_id: string;
  name: string | null;
  price: number | null;
  currency: string | null;
  category: string | null;
  source: 'orders' | 'api';
  created_at: string;
  updated_at: string;
}
