import { AccessReviewResolver } from './access-review.js';
import { AgentVersionResolver } from './agent-version.js';
import { AlertResolver } from './alert.js';
import { AlertChannelResolver } from './alert-channel.js';
import { AlertPolicyResolver } from './alert-policy.js';
import { ApiKeyResolver } from './api-key.js';
import { AuditResolver } from './audit.js';
import { AutomationResolver } from './automation.js';
import { AuthResolver } from './auth.js';
import { DeviceResolver } from './device.js';
import { DeviceGroupResolver } from './device-group.js';
import { EnrollmentKeyResolver } from './enrollment-key.js';
import { MaintenanceResolver } from './maintenance.js';
import { NotificationResolver } from './notification.js';
import { OrganizationResolver } from './organization.js';
import { PartnerResolver } from './partner.js';
import { RoleResolver } from './role.js';
import { ScriptResolver } from './script.js';
import { SiteResolver } from './site.js';
import { SsoResolver } from './sso.js';
import { SystemResolver } from './system.js';
import { UserResolver } from './user.js';
import { WebhookResolver } from './webhook.js';

/** Every GraphQL resolver class; a domain adds its resolver here. */
export const resolvers = [SystemResolver, AuthResolver, PartnerResolver, OrganizationResolver, SiteResolver, UserResolver, RoleResolver, WebhookResolver, ApiKeyResolver, AccessReviewResolver, AuditResolver, SsoResolver, DeviceResolver, EnrollmentKeyResolver, AgentVersionResolver, DeviceGroupResolver, MaintenanceResolver, AlertChannelResolver, AlertPolicyResolver, NotificationResolver, AlertResolver, AutomationResolver, ScriptResolver] as const;
